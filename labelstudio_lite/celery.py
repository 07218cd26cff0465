"""The Celery app. Settings come from Django's settings under the CELERY_ prefix."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelstudio_lite.settings")

app = Celery("labelstudio_lite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
