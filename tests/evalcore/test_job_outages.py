"""Jobs through outages, in-process (the fault tests with real servers are in tests/deploy/test_outages.py): the
cache away never fails a job, a database outage under a job is recorded with the true reason once the database
answers, and a queued job whose task no worker took is sent again by the job's page and by a worker's sweep."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import OperationalError
from django.utils import timezone

from evalcore.jobs import dispatch, runner, worker
from evalcore.jobs.kinds import IMPORT_EVALSET
from evalcore.jobs.runner import job_run
from evalcore.jobs.task import run_job
from evalcore.models import Job

from .test_job_operations import with_handler


def redis_away(*args, **kwargs):
    raise ConnectionError("Error 111 connecting to 127.0.0.1:6390. Connection refused.")


def queued_import() -> Job:
    return Job.objects.create(kind=IMPORT_EVALSET, params={"path": "", "name": "support"})


@pytest.mark.django_db
def test_a_job_whose_cache_is_away_runs_to_its_end_and_keeps_its_result(monkeypatch):
    def handler(params, job, progress):
        for done in range(0, 101, 50):
            progress(done, 100, "importing")
        return {"created": True}

    with_handler(monkeypatch, handler)
    for method in ("set", "get", "add", "delete", "delete_many"):
        monkeypatch.setattr(cache, method, redis_away)
    job = job_run(queued_import().pk)
    assert (job.status, job.result, job.error) == (Job.Status.SUCCEEDED, {"created": True}, "")


@pytest.mark.django_db
def test_a_database_outage_under_a_job_is_recorded_with_the_true_reason_once_the_database_answers(monkeypatch):
    def handler(params, job, progress):
        raise OperationalError('connection to server at "127.0.0.1", port 5440 failed: Connection refused')

    with_handler(monkeypatch, handler)
    finish, tries, pauses = runner._finish, [], []

    def finish_when_back(job_id, **outcome):
        tries.append(outcome)
        if len(tries) < 3:  # the database is still away for the first two tries
            raise OperationalError("the connection is closed")
        finish(job_id, **outcome)

    monkeypatch.setattr(runner, "_finish", finish_when_back)
    monkeypatch.setattr(runner.time, "sleep", pauses.append)
    monkeypatch.setattr(runner.connection, "close", lambda: None)  # keep the test's transaction
    job = job_run(queued_import().pk)
    assert job.status == Job.Status.FAILED and len(tries) == 3 and pauses == [0.5, 1.0]
    assert job.error.startswith("The database became unavailable while this job ran (OperationalError: connection")
    assert "Nothing of it was kept" in job.error and "killed or crashed" not in job.error


@pytest.mark.django_db
def test_a_job_still_waiting_for_the_database_past_its_limit_gives_up_with_the_error(monkeypatch, settings):
    settings.JOB_OUTAGE_WAIT_SECONDS = 0
    with_handler(monkeypatch, lambda *a: {})
    monkeypatch.setattr(runner, "_finish", lambda job_id, **o: (_ for _ in ()).throw(OperationalError("away")))
    monkeypatch.setattr(runner.time, "sleep", lambda s: None)
    monkeypatch.setattr(runner.connection, "close", lambda: None)
    with pytest.raises(OperationalError):
        job_run(queued_import().pk)


@pytest.fixture
def broker_up(settings, monkeypatch):
    """A broker that accepts every task (recorded, not run)."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    accepted: list[int] = []
    monkeypatch.setattr(run_job, "apply_async", lambda args, **kwargs: accepted.append(args[0]))
    return accepted


@pytest.mark.django_db
def test_a_queued_job_whose_task_no_worker_took_is_sent_again_by_its_page_and_by_the_sweep(broker_up, owner_client):
    long_ago = timezone.now() - timedelta(minutes=30)
    lost = Job.objects.create(kind=IMPORT_EVALSET, created_at=long_ago, sent_at=long_ago)  # lost with the broker
    waiting = Job.objects.create(kind=IMPORT_EVALSET, created_at=long_ago, sent_at=timezone.now())  # just sent
    assert owner_client.get(f"/jobs/{lost.pk}/").status_code == 200 and broker_up == [lost.pk]
    lost.refresh_from_db()
    assert lost.status == Job.Status.QUEUED and lost.sent_at > long_ago  # sent again now: not again at every look

    owner_client.get(f"/jobs/{lost.pk}/")
    assert broker_up == [lost.pk]

    Job.objects.filter(pk=lost.pk).update(sent_at=long_ago)  # again nobody took it
    assert worker.sweep_once(None) and broker_up == [lost.pk, lost.pk]
    assert Job.objects.get(pk=waiting.pk).sent_at > long_ago and waiting.pk not in broker_up


@pytest.mark.django_db
def test_a_sweep_that_meets_an_outage_logs_it_and_the_next_one_works(broker_up, monkeypatch, caplog):
    recover = dispatch.jobs_recover
    monkeypatch.setattr(dispatch, "jobs_recover", lambda: (_ for _ in ()).throw(OperationalError("server closed")))
    assert not worker.sweep_once(None)
    assert "the periodic job sweep failed (OperationalError: server closed)" in caplog.text
    monkeypatch.setattr(dispatch, "jobs_recover", recover)
    assert worker.sweep_once(None)


@pytest.mark.django_db
def test_the_periodic_sweep_resumes_a_silent_judge_run_only_once_its_process_is_gone(broker_up):
    """A judge run silent for a while (the database away, a slow call) whose process lives is left to it; a
    starting worker resumes every stale one, as it always did; a dead process's run is resumed by any sweep."""
    from evalcore.jobs.liveness import this_process
    from evalcore.jobs.registry import resumable_kinds

    from .test_job_recovery import dead_pid

    kind = resumable_kinds()[0]
    silent = timezone.now() - timedelta(minutes=10)
    host = this_process().split(":")[0]
    params = {"run": 1, "judge_config": 1}
    alive = Job.objects.create(
        kind=kind, status="running", runner=this_process(), started_at=silent, heartbeat_at=silent, params=params
    )
    dead = Job.objects.create(
        kind=kind,
        status="running",
        runner=f"{host}:{dead_pid()}:1",
        started_at=silent,
        heartbeat_at=silent,
        params=params,
    )
    assert worker.sweep_once(None) and broker_up == [dead.pk]
    assert worker.sweep_once(None, starting=True) and sorted(broker_up) == sorted([dead.pk, dead.pk, alive.pk])
