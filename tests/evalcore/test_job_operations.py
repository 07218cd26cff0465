"""Jobs that never hang or run twice: the broker must take a job before it is "queued", a task delivered again
runs its job once, a job whose process is gone (a killed pool child, a lost host) is failed with the reason and
offers a retry, a time limit ends a job in words, and a same-name race gives the documented message."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from kombu.exceptions import OperationalError as KombuOperationalError

from evalcore.jobs import dispatch, liveness, registry
from evalcore.jobs.kinds import IMPORT_EVALSET
from evalcore.jobs.liveness import job_reap, this_process
from evalcore.jobs.runner import job_run
from evalcore.jobs.task import run_job
from evalcore.models import Job, Run
from evalcore.services.problems import ImportFailed
from evalcore.services.runs import run_import
from evalcore.services.uploads import stored_uploads
from tests.factories import QUESTIONS, make_eval_set, ok_rows
from tests.files import write_jsonl

from .test_job_recovery import dead_pid

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def broker_down(settings, monkeypatch):
    """A broker that refuses every task, as a stopped Redis does (the deployment test stops a real one)."""
    settings.CELERY_TASK_ALWAYS_EAGER = False

    def refuse(*args, **kwargs):
        raise KombuOperationalError("Error 111 connecting to 127.0.0.1:6399. Connection refused.")

    monkeypatch.setattr(run_job, "apply_async", refuse)


def with_handler(monkeypatch, handler) -> None:
    """Run eval set import jobs with ``handler`` instead of the import."""
    import dataclasses

    kind = registry.JOB_KINDS[IMPORT_EVALSET]
    monkeypatch.setitem(registry.JOB_KINDS, IMPORT_EVALSET, dataclasses.replace(kind, handler=handler))


def questions_file() -> SimpleUploadedFile:
    return SimpleUploadedFile("questions.jsonl", "".join(json.dumps(q) + "\n" for q in QUESTIONS).encode())


@pytest.mark.django_db(transaction=True)  # the task is sent once the job's row is committed
def test_an_api_upload_while_the_broker_is_down_is_a_json_503_and_leaves_no_job_and_no_upload(
    broker_down, owner_client
):
    response = owner_client.post("/api/evalsets/import/", {"file": questions_file(), "name": "support"})
    assert response.status_code == 503 and response["Retry-After"]
    assert "broker" in response.json()["detail"] and response.json()["unavailable"] is True
    assert not Job.objects.exists()
    assert list(stored_uploads()) == []


@pytest.mark.django_db(transaction=True)
def test_a_page_upload_while_the_broker_is_down_says_so_on_the_form_and_leaves_no_job_and_no_upload(
    broker_down, owner_client
):
    response = owner_client.post("/evalsets/", {"file": questions_file(), "name": "support", "format": ""})
    assert response.status_code == 503
    assert "The job queue (broker) is unavailable" in response.content.decode()
    assert not Job.objects.exists()
    assert list(stored_uploads()) == []


@pytest.mark.django_db
def test_a_task_delivered_again_while_its_job_still_runs_does_not_run_it_twice(monkeypatch):
    job = Job.objects.create(
        kind=IMPORT_EVALSET, status=Job.Status.RUNNING, runner=this_process(), params={"path": "/x.jsonl", "name": "x"}
    )
    called = []
    with_handler(monkeypatch, lambda *a: called.append(a) or {})
    assert run_job.apply(args=(job.pk,)).get() == "running"
    assert called == []


@pytest.mark.django_db
def test_a_task_delivered_again_after_its_pool_child_was_killed_fails_the_job_with_the_reason(owner_client):
    host = this_process().split(":")[0]
    job = Job.objects.create(
        kind=IMPORT_EVALSET,
        status=Job.Status.RUNNING,
        runner=f"{host}:{dead_pid()}:1",
        params={"path": "/x.jsonl", "name": "support"},
        done=67,
        total=100,
    )
    assert run_job.apply(args=(job.pk,)).get() == "failed"
    job.refresh_from_db()
    assert "stopped before the job finished: it was killed or crashed" in job.error
    page = owner_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "killed or crashed" in page and f"retry={job.pk}" in page  # the page offers the form again


@pytest.mark.django_db
def test_the_job_page_fails_a_job_whose_process_is_gone_instead_of_showing_it_running(owner_client):
    host = this_process().split(":")[0]
    job = Job.objects.create(kind=IMPORT_EVALSET, status=Job.Status.RUNNING, runner=f"{host}:{dead_pid()}:1")
    owner_client.get(f"/jobs/{job.pk}/")
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED


def cache_up_since(minutes: float) -> None:
    """The shared cache has held our keys (without losing them) for ``minutes``."""
    cache.set(liveness.CACHE_BORN_KEY, (timezone.now() - timedelta(minutes=minutes)).timestamp(), None)


@pytest.mark.django_db
def test_a_job_on_another_host_is_failed_once_its_alive_key_lapses_in_the_shared_cache(monkeypatch):
    monkeypatch.setattr(liveness, "_shared_cache", lambda: True)
    cache_up_since(10)
    long_ago = timezone.now() - timedelta(minutes=5)
    lost = Job.objects.create(
        kind=IMPORT_EVALSET, status=Job.Status.RUNNING, runner="lost-host:41:7", started_at=long_ago
    )
    alive = Job.objects.create(
        kind=IMPORT_EVALSET, status=Job.Status.RUNNING, runner="busy-host:42:7", started_at=long_ago
    )
    just_started = Job.objects.create(
        kind=IMPORT_EVALSET, status=Job.Status.RUNNING, runner="new-host:43:7", started_at=timezone.now()
    )
    cache.set(f"job-alive:{alive.pk}", alive.runner, 60)
    assert dispatch.jobs_recover() == [lost.pk]
    lost.refresh_from_db()
    assert "pid 41 on lost-host" in lost.error
    assert not job_reap(Job.objects.get(pk=alive.pk)) and not job_reap(Job.objects.get(pk=just_started.pk))


@pytest.mark.django_db
def test_a_lapsed_alive_key_in_a_cache_that_lost_its_keys_or_is_away_is_cannot_tell_not_gone(monkeypatch, settings):
    """A Redis restarted empty in an outage lost every alive key: no job is failed for it until live processes
    had one key lifetime to write theirs again; a cache that cannot be reached tells nothing either."""
    monkeypatch.setattr(liveness, "_shared_cache", lambda: True)
    long_ago = timezone.now() - timedelta(minutes=5)
    job = Job.objects.create(
        kind=IMPORT_EVALSET, status=Job.Status.RUNNING, runner="far-host:41:7", started_at=long_ago
    )
    assert liveness.runner_state(job) == "unknown"  # the cache holds nothing of ours: it (re)started just now
    assert dispatch.jobs_recover() == [] and Job.objects.get(pk=job.pk).status == Job.Status.RUNNING

    cache_up_since(0.5 * 3 * settings.JOB_HEARTBEAT_SECONDS / 60)  # back for half a key lifetime: still cannot tell
    assert liveness.runner_state(job) == "unknown"
    cache.set(f"job-alive:{job.pk}", job.runner, 60)  # the live process wrote its key again
    assert liveness.runner_state(job) == "alive"
    cache.delete(f"job-alive:{job.pk}")
    cache_up_since(2 * 3 * settings.JOB_HEARTBEAT_SECONDS / 60)  # a whole key lifetime and no key: gone
    assert liveness.runner_state(job) == "gone"

    def away(*args, **kwargs):
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6390. Connection refused.")

    monkeypatch.setattr(liveness.cache, "get", away)
    monkeypatch.setattr(liveness.cache, "add", away)
    assert liveness.runner_state(job) == "unknown" and not job_reap(job)
    assert Job.objects.get(pk=job.pk).status == Job.Status.RUNNING


@pytest.mark.django_db
def test_a_running_job_keeps_its_alive_key_and_drops_it_when_it_ends(monkeypatch, tmp_path):
    seen = []

    def handler(params, job, progress):
        seen.append(cache.get(f"job-alive:{job.pk}"))
        return {}

    with_handler(monkeypatch, handler)
    job = Job.objects.create(kind=IMPORT_EVALSET, params={"path": str(tmp_path / "q.jsonl"), "name": "x"})
    assert job_run(job.pk).status == Job.Status.SUCCEEDED
    assert seen == [this_process()] and cache.get(f"job-alive:{job.pk}") is None


@pytest.mark.django_db
def test_a_job_past_its_soft_time_limit_fails_in_words(monkeypatch, settings):
    from celery.exceptions import SoftTimeLimitExceeded

    def slow(params, job, progress):
        raise SoftTimeLimitExceeded()

    with_handler(monkeypatch, slow)
    job = Job.objects.create(kind=IMPORT_EVALSET, params={"path": "/x.jsonl", "name": "x"})
    finished = job_run(job.pk)
    assert finished.status == Job.Status.FAILED
    assert f"time limit ({settings.CELERY_TASK_SOFT_TIME_LIMIT} s, JOB_SOFT_TIME_LIMIT)" in finished.error


@pytest.mark.django_db(transaction=True)
def test_two_imports_racing_for_one_run_name_give_the_documented_message_not_an_integrity_error(tmp_path, monkeypatch):
    """The second import passed the name check before the first one stored its run (injected here)."""
    make_eval_set(folder=tmp_path, questions=QUESTIONS, name="support")
    first = write_jsonl(tmp_path / "first.jsonl", ok_rows())
    second = write_jsonl(tmp_path / "second.jsonl", ok_rows()[:3])
    from evalcore.services import runs

    original = runs.QuestionIndex.load
    raced = []

    def load_then_race(version):
        if not raced:
            raced.append(True)
            run_import(path=first, evalset="support", name="chunks-256")  # the other import wins the race
        return original(version)

    monkeypatch.setattr(runs.QuestionIndex, "load", staticmethod(load_then_race))
    with pytest.raises(ImportFailed) as refused:
        run_import(path=second, evalset="support", name="chunks-256")
    assert "a run named 'chunks-256' already exists on support v1 with different content; choose another name" in str(
        refused.value
    )
    assert Run.objects.filter(name="chunks-256").count() == 1


def _settings(env: dict[str, str], expr: str) -> subprocess.CompletedProcess:
    import os

    code = f"import django; from django.conf import settings; django.setup(); print(repr({expr}))"
    full = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_", "JOB_"))}
    full.update(env, DJANGO_SETTINGS_MODULE="labelstudio_lite.settings")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=full, capture_output=True, text=True)


def test_the_broker_gives_a_task_to_another_worker_only_after_the_longest_job_could_have_run(tmp_path):
    result = _settings(
        {"VAR_DIR": str(tmp_path), "CELERY_BROKER_URL": "redis://127.0.0.1:6379/9", "JOB_TIME_LIMIT": "7200"},
        "(settings.CELERY_BROKER_TRANSPORT_OPTIONS['visibility_timeout'], settings.CELERY_TASK_TIME_LIMIT, "
        "settings.CELERY_TASK_SOFT_TIME_LIMIT, settings.CELERY_TASK_ACKS_LATE, settings.CELERY_TASK_REJECT_ON_WORKER_LOST)",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(10800, 7200, 7140, True, True)"
    from labelstudio_lite.celery import app

    assert app.conf.task_reject_on_worker_lost is True and app.conf.task_acks_late is True
    assert app.conf.broker_transport_options["visibility_timeout"] > app.conf.task_time_limit


def test_a_visibility_timeout_below_the_time_limit_stops_start_up(tmp_path):
    result = _settings(
        {"VAR_DIR": str(tmp_path), "JOB_TIME_LIMIT": "7200", "CELERY_VISIBILITY_TIMEOUT": "3600"}, "settings.DEBUG"
    )
    assert result.returncode != 0
    assert "CELERY_VISIBILITY_TIMEOUT=3600 must be above JOB_TIME_LIMIT=7200" in result.stderr


@pytest.mark.django_db(transaction=True)
def test_a_command_while_the_broker_is_down_says_so_in_one_line_and_leaves_no_job_and_no_upload(broker_down, tmp_path):
    import io

    from django.core.management import call_command
    from django.core.management.base import CommandError

    path = write_jsonl(tmp_path / "questions.jsonl", QUESTIONS)
    with pytest.raises(CommandError) as refused:
        call_command("import_evalset", str(path), "--name", "support", "--quiet", stdout=io.StringIO())
    assert str(refused.value).startswith("The job queue (broker) is unavailable") and "\n" not in str(refused.value)
    assert not Job.objects.exists() and list(stored_uploads()) == [] and path.exists()


@pytest.mark.django_db
def test_a_job_whose_task_ended_without_recording_its_end_is_failed_though_its_process_lives_on(monkeypatch):
    """A pool process outlives the task (the database was away when the job's end was written): the alive key lapses."""
    monkeypatch.setattr(liveness, "_shared_cache", lambda: True)
    cache_up_since(10)
    job = Job.objects.create(
        kind=IMPORT_EVALSET,
        status=Job.Status.RUNNING,
        runner=this_process(),
        started_at=timezone.now() - timedelta(minutes=5),
    )
    assert job_reap(job)


@pytest.fixture
def broker_up(settings, monkeypatch):
    """A broker that accepts every task (recorded, not run)."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    accepted: list[int] = []
    monkeypatch.setattr(run_job, "apply_async", lambda args, **kwargs: accepted.append(args[0]))
    return accepted


@pytest.mark.django_db
def test_a_job_whose_sender_died_before_the_hand_off_is_sent_by_the_next_door_once(broker_up, owner_client):
    # the web process committed the job's row and was killed before it reached the broker
    orphan = Job.objects.create(kind=IMPORT_EVALSET, created_at=timezone.now() - timedelta(minutes=5))
    just_made = Job.objects.create(kind=IMPORT_EVALSET)  # its sender may be about to send it: left alone
    handed_off = Job.objects.create(kind=IMPORT_EVALSET, created_at=orphan.created_at, sent_at=orphan.created_at)

    page = owner_client.get(f"/jobs/{orphan.pk}/")
    assert page.status_code == 200 and broker_up == [orphan.pk]
    orphan.refresh_from_db()
    assert orphan.status == Job.Status.QUEUED and orphan.sent_at is not None

    dispatch.jobs_recover()  # what every door, the CLI and a starting worker call
    assert broker_up == [orphan.pk]  # once, not at every look
    assert Job.objects.get(pk=just_made.pk).sent_at is None and Job.objects.get(pk=handed_off.pk).sent_at is not None


@pytest.mark.django_db
def test_a_job_the_broker_took_says_when_and_one_it_still_refuses_waits_for_the_next_try(broker_up, monkeypatch):
    dispatch.job_send(Job.objects.create(kind=IMPORT_EVALSET).pk)
    assert Job.objects.get().sent_at is not None

    orphan = Job.objects.create(kind=IMPORT_EVALSET, created_at=timezone.now() - timedelta(minutes=5))

    def refuse(*args, **kwargs):
        raise KombuOperationalError("Connection refused.")

    monkeypatch.setattr(run_job, "apply_async", refuse)
    assert dispatch.jobs_send_unsent() == []
    orphan.refresh_from_db()
    assert orphan.status == Job.Status.QUEUED and orphan.sent_at is None  # still there for the next try
