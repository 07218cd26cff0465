"""/readyz and the job page say whether a worker consumes the jobs' queue: with a real Celery worker on Redis,
then without it; in the embedded mode there is none, by design, and they say that."""

from __future__ import annotations

import time

import pytest
from django.core.cache import cache
from django.test import Client

from evalcore.models import Job
from labelstudio_lite import health

from .conftest import start_celery_worker, stop_celery_worker
from .test_celery_worker import own_queue

pytestmark = pytest.mark.django_db


def asked() -> health.Workers:
    cache.clear()  # the answer is kept a few seconds: ask again
    return health.workers_consuming(timeout=1.0)


def test_in_the_embedded_mode_there_is_no_worker_by_design(owner_client):
    body = Client().get("/readyz").json()
    assert body["status"] == "ok" and body["workers"]["consuming"] is None
    assert "embedded mode" in body["workers"]["detail"]
    job = Job.objects.create(kind="import_run", status=Job.Status.QUEUED)
    page = owner_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "No worker is taking jobs" not in page and "starting" in page


@pytest.mark.redis
def test_readyz_and_the_job_page_say_when_no_worker_consumes_and_when_one_does(settings, owner_client, tmp_path):
    with own_queue(settings) as queue:
        nobody = asked()
        assert nobody.consuming is False and (queue in nobody.detail or "no worker answered" in nobody.detail)
        cache.clear()
        body = Client().get("/readyz").json()
        assert body["status"] == "ok"  # told, not failed: pages are served without workers
        assert body["workers"]["consuming"] is False
        job = Job.objects.create(kind="import_run", status=Job.Status.QUEUED)
        page = owner_client.get(f"/jobs/{job.pk}/").content.decode()
        assert "No worker is taking jobs" in page and "stays queued until one starts" in page

        worker = start_celery_worker(queue, tmp_path / "worker.log")
        try:
            deadline = time.monotonic() + 60
            while not (found := asked()).consuming and time.monotonic() < deadline:
                time.sleep(0.5)
            assert found.consuming is True, (found, (tmp_path / "worker.log").read_text()[-2000:])
            assert f"consume queue {queue!r}" in found.detail
            cache.clear()
            assert Client().get("/readyz").json()["workers"]["consuming"] is True
            cache.clear()
            assert "No worker is taking jobs" not in owner_client.get(f"/jobs/{job.pk}/").content.decode()
        finally:
            stop_celery_worker(worker)
        assert asked().consuming is False  # stopped: said again at once (once the kept answer expires)
