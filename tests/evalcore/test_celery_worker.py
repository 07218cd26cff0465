"""Jobs on a real Celery worker through a real broker (Redis), not eager mode.

Each test routes its tasks to a queue of its own, so a worker of another test run on the same
broker cannot take them (nor this worker theirs).
"""

from __future__ import annotations

import json
import time
import uuid
from contextlib import contextmanager

import pytest
from celery.signals import task_prerun
from django.core.files.uploadedfile import SimpleUploadedFile

from evalcore.jobs.kinds import RunImportParams, request_run_import
from evalcore.models import EvalSetVersion, Job, Run
from labelstudio_lite.celery import app
from tests.factories import QUESTIONS, ok_rows
from tests.files import write_jsonl

from .conftest import start_celery_worker, stop_celery_worker


def wait_for(job_id: int, timeout: float = 90.0) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = Job.objects.get(pk=job_id)
        if job.finished:
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish within {timeout} s (status {Job.objects.get(pk=job_id).status})")


@contextmanager
def own_queue(settings):
    """Real (not eager) tasks, sent to a queue only this test's worker reads."""
    queue = f"evalcore-test-{uuid.uuid4().hex[:10]}"
    previous = (app.conf.task_always_eager, app.conf.task_default_queue)
    settings.CELERY_TASK_ALWAYS_EAGER = False
    app.conf.task_always_eager = False
    app.conf.task_default_queue = queue
    try:
        yield queue
    finally:
        app.conf.task_always_eager, app.conf.task_default_queue = previous
        with app.connection() as connection:
            connection.default_channel.queue_delete(queue)


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_api_uploads_run_as_jobs_on_an_in_process_worker_through_the_broker(settings, client, owner):
    from celery.contrib.testing.worker import start_worker

    client.force_login(owner)
    ran_eagerly: list[bool] = []

    def record(task=None, **kwargs):
        ran_eagerly.append(bool(task.request.is_eager))

    task_prerun.connect(record, weak=False)
    try:
        with (
            own_queue(settings) as queue,
            start_worker(app, pool="solo", perform_ping_check=False, queues=[queue], shutdown_timeout=30),
        ):
            good = SimpleUploadedFile("questions.jsonl", "".join(json.dumps(q) + "\n" for q in QUESTIONS).encode())
            response = client.post("/api/evalsets/import/", {"file": good, "name": "support"})
            assert response.status_code == 202
            assert response.json()["status"] == "queued"  # the request did not wait for the work
            good_job = wait_for(response.json()["id"])
            bad = SimpleUploadedFile("broken.jsonl", (json.dumps(QUESTIONS[0]) + "\n{oops\n").encode())
            bad_job = wait_for(client.post("/api/evalsets/import/", {"file": bad, "name": "other"}).json()["id"])
    finally:
        task_prerun.disconnect(record)
    assert good_job.status == "succeeded", good_job.error
    assert good_job.started_at is not None and good_job.finished_at >= good_job.started_at
    version = EvalSetVersion.objects.get(eval_set__name="support")
    assert version.sealed and version.question_count == 5 and good_job.result["version_id"] == version.pk
    assert bad_job.status == "failed"
    assert bad_job.result["problems"][0]["line"] == 2 and "broken.jsonl, line 2: malformed JSON" in bad_job.error
    assert not EvalSetVersion.objects.filter(eval_set__name="other").exists()
    assert ran_eagerly == [False, False]  # both ran on the worker, from the broker


@pytest.mark.redis
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_separate_celery_worker_process_runs_a_job_on_the_test_database(settings, tmp_path, owner):
    from evalcore.jobs.task import run_job
    from evalcore.services.evalsets import evalset_import

    evalset_import(path=write_jsonl(tmp_path / "questions.jsonl", QUESTIONS), name="support")
    rows = write_jsonl(tmp_path / "rows.jsonl", ok_rows())
    with own_queue(settings) as queue:
        worker = start_celery_worker(queue, tmp_path / "worker.log")
        try:
            job = request_run_import(
                params=RunImportParams(
                    path=str(rows), evalset="support", name="from-worker", k=3, display_name="rows.jsonl"
                ),
                user=owner,
                start=False,
            )
            run_job.delay(job.pk)
            finished = wait_for(job.pk, timeout=120)
        finally:
            stop_celery_worker(worker)
    output = (tmp_path / "worker.log").read_text()
    assert finished.status == "succeeded", f"{finished.error}\n--- worker log ---\n{output[-3000:]}"
    run = Run.objects.get(name="from-worker")
    assert finished.result["run_id"] == run.pk and run.row_count == 5 and run.created_by == owner
    assert "evalcore.run_job" in output and "succeeded" in output
