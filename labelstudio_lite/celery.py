"""The Celery app. Settings come from Django's settings under the CELERY_ prefix."""

import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelstudio_lite.settings")

app = Celery("labelstudio_lite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _recover_abandoned_jobs(**kwargs: object) -> None:
    """A worker that starts marks failed the jobs a killed worker of this host left "running"."""
    from evalcore.services.jobs import jobs_recover

    jobs_recover()
