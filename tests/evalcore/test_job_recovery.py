"""A job whose process was killed does not stay "running": the next worker, command or request of the
same host marks it failed with the reason, and deletes its uploads."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from celery.signals import worker_ready
from django.core.management import call_command

from evalcore.jobs.dispatch import jobs_recover
from evalcore.jobs.kinds import IMPORT_EVALSET, JUDGE_RUN
from evalcore.jobs.liveness import this_process
from evalcore.models import EvalSet, Job
from tests.factories import QUESTIONS
from tests.files import write_jsonl

from .conftest import subprocess_env

ROOT = Path(__file__).resolve().parents[2]


def dead_pid() -> int:
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    return finished.pid


def running_job(runner: str, path: str = "/nowhere.jsonl") -> Job:
    return Job.objects.create(
        kind=IMPORT_EVALSET, status=Job.Status.RUNNING, runner=runner, params={"path": path, "name": "x"}
    )


def import_questions(folder: Path, name: str) -> None:
    """Start a command that runs a job (an eval set import), as the next person at the terminal would."""
    path = write_jsonl(folder / f"{name}.jsonl", QUESTIONS)
    call_command("import_evalset", str(path), "--name", name, "--quiet", stdout=io.StringIO())


def saved_upload(settings) -> Path:
    folder = Path(settings.MEDIA_ROOT) / "uploads" / ("a" * 32)
    folder.mkdir(parents=True)
    path = folder / "questions.jsonl"
    path.write_text("{}\n")
    return path


@pytest.mark.django_db
def test_the_next_command_marks_a_killed_jobs_failed_with_the_reason_and_deletes_its_upload(settings, tmp_path):
    host = this_process().split(":")[0]
    upload = saved_upload(settings)
    killed = running_job(f"{host}:{dead_pid()}:12345", str(upload))

    import_questions(tmp_path, "next")

    killed.refresh_from_db()
    assert killed.status == Job.Status.FAILED and killed.finished_at is not None
    assert "stopped before the job finished: it was killed or crashed" in killed.error
    assert not upload.exists()


@pytest.mark.django_db
def test_a_job_whose_process_still_runs_or_runs_elsewhere_is_left_alone(db):
    alive = running_job(this_process())
    elsewhere = running_job(f"another-host:{dead_pid()}:1")
    assert jobs_recover() == []
    assert {j.status for j in Job.objects.filter(pk__in=[alive.pk, elsewhere.pk])} == {Job.Status.RUNNING}


@pytest.mark.django_db
def test_a_reused_pid_does_not_keep_a_dead_job_running(db):
    host, pid, started = this_process().split(":")
    if not started:
        pytest.skip("process start times are read from /proc (Linux)")
    reused = running_job(f"{host}:{pid}:{int(started) - 1}")
    assert jobs_recover() == [reused.pk]


@pytest.mark.django_db
def test_a_worker_that_starts_recovers_the_jobs_a_killed_worker_left(db):
    host = this_process().split(":")[0]
    killed = running_job(f"{host}:{dead_pid()}:1")
    worker_ready.send(sender=None)
    killed.refresh_from_db()
    assert killed.status == Job.Status.FAILED


@pytest.mark.django_db
@pytest.mark.parametrize("eager", [True, False], ids=["embedded", "broker"])
def test_a_killed_judge_run_is_left_to_resume_where_a_worker_will_queue_it_again(settings, eager):
    """A resumable job (a judge run) is not failed where a broker is in use: the next worker resumes it from
    the cache. In embedded mode nobody will, so it is failed with words that say starting it again resumes."""
    settings.CELERY_TASK_ALWAYS_EAGER = eager
    host = this_process().split(":")[0]
    killed = Job.objects.create(
        kind=JUDGE_RUN, status=Job.Status.RUNNING, runner=f"{host}:{dead_pid()}:1", params={"run": 1, "judge_config": 1}
    )
    assert jobs_recover() == ([killed.pk] if eager else [])
    killed.refresh_from_db()
    if eager:
        assert killed.status == Job.Status.FAILED and "resumes where it stopped" in killed.error
    else:
        assert killed.status == Job.Status.RUNNING


@pytest.mark.slow  # seconds of subprocesses or simulation: CI runs it (./dev test -m "")
@pytest.mark.django_db(transaction=True)
def test_an_import_killed_midway_is_failed_by_the_next_command_and_wrote_nothing(tmp_path):
    questions = [{"id": f"k{i:06d}", "question": f"Question {i}?", "gold": [{"doc": f"d{i}"}]} for i in range(150_000)]
    big = write_jsonl(tmp_path / "big.jsonl", questions)
    process = subprocess.Popen(
        [sys.executable, "manage.py", "import_evalset", str(big), "--name", "killed", "--quiet"],
        cwd=ROOT,
        env=subprocess_env(PYTHONPATH=str(ROOT)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not Job.objects.filter(status=Job.Status.RUNNING, runner__contains=f":{process.pid}:").exists():
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "the import never started"
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    job = Job.objects.get(runner__contains=f":{process.pid}:")
    assert job.status == Job.Status.RUNNING  # nobody has looked yet

    import_questions(tmp_path, "after")

    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and f"pid {process.pid}" in job.error
    assert not EvalSet.objects.filter(name="killed").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("starts", [1, 3])
def test_a_judge_run_that_keeps_killing_its_worker_is_resumed_twice_then_failed_in_words(settings, monkeypatch, starts):
    """A job that runs its worker out of memory would be resumed, and killed, forever: after three starts the
    task delivered again fails it with the reason instead."""
    import dataclasses

    from evalcore.jobs import registry
    from evalcore.jobs.runner import job_run

    settings.CELERY_TASK_ALWAYS_EAGER = False
    kind = registry.JOB_KINDS[JUDGE_RUN]
    monkeypatch.setitem(
        registry.JOB_KINDS, JUDGE_RUN, dataclasses.replace(kind, handler=lambda local, job, progress: {"ok": 1})
    )
    host = this_process().split(":")[0]
    killed = Job.objects.create(
        kind=JUDGE_RUN,
        status=Job.Status.RUNNING,
        runner=f"{host}:{dead_pid()}:1",
        params={"run": 1, "judge_config": 1},
        starts=starts,
    )
    job_run(killed.pk)  # the broker delivers its task again (reject_on_worker_lost)
    killed.refresh_from_db()
    if starts < 3:
        assert killed.status == Job.Status.SUCCEEDED and killed.starts == starts + 1
    else:
        assert killed.status == Job.Status.FAILED and killed.starts == 3
        assert "stopped 3 times" in killed.error and "more memory" in killed.error
