"""A job's thread runs at JOB_NICENESS (imports and scoring yield the CPU to the pages people use); the thread
that asked for it, the web server's in the embedded mode, keeps its priority."""

from __future__ import annotations

import dataclasses
import io
import os
import threading

import pytest
from django.core.management import call_command

from evalcore.jobs import registry
from evalcore.jobs.kinds import IMPORT_EVALSET
from evalcore.jobs.priority import lower_priority, thread_niceness
from evalcore.models import EvalSet, Job
from tests.factories import QUESTIONS
from tests.files import write_jsonl


def _in_a_thread(target):
    """Run ``target`` in a fresh thread (whose priority may stay lowered) and return what it returned."""
    box: dict = {}

    def run():
        try:
            box["value"] = target()
        except BaseException as error:  # re-raised below, in the test's thread
            box["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    if "error" in box:
        raise box["error"]
    return box["value"]


def _niceness_of_import_jobs(monkeypatch) -> list[int | None]:
    """Eval set import jobs record the nice value of the thread their handler runs in, then import as ever."""
    kind = registry.JOB_KINDS[IMPORT_EVALSET]
    seen: list[int | None] = []

    def handler(params, job, progress):
        seen.append(thread_niceness())
        return kind.handler(params, job, progress)

    monkeypatch.setitem(registry.JOB_KINDS, IMPORT_EVALSET, dataclasses.replace(kind, handler=handler))
    return seen


def test_the_block_runs_at_the_niceness_asked_and_other_threads_keep_theirs():
    def probe():
        before = thread_niceness()
        seen_elsewhere: list[int | None] = []
        with lower_priority(before + 5):
            inside = thread_niceness()
            other = threading.Thread(target=lambda: seen_elsewhere.append(thread_niceness()))
            other.start()
            other.join()
        return before, inside, seen_elsewhere[0], thread_niceness()

    before, inside, started_inside, after = _in_a_thread(probe)
    assert inside == before + 5
    assert started_inside == before + 5, "a thread the job starts (the background COPY) inherits its priority"
    assert thread_niceness() == before, "only the block's thread is lowered"
    # back to where it was where the system allows it (root, CAP_SYS_NICE), else it stays lower
    assert after in (before, before + 5)
    if os.geteuid() == 0:
        assert after == before


def test_it_never_raises_a_priority_and_zero_turns_it_off():
    def probe():
        start = thread_niceness()
        with lower_priority(start + 3):
            lowered = thread_niceness()
            with lower_priority(start + 1):  # lower than asked already: left as it is
                nested = thread_niceness()
        with lower_priority(0):
            off = thread_niceness()
        return start, lowered, nested, off

    start, lowered, nested, off = _in_a_thread(probe)
    assert (lowered, nested) == (start + 3, start + 3)
    assert off in (start, start + 3)


@pytest.mark.django_db(transaction=True)
def test_an_import_job_runs_at_job_niceness_and_the_command_thread_keeps_its_own(settings, tmp_path, monkeypatch):
    settings.JOB_NICENESS = thread_niceness() + 7
    seen = _niceness_of_import_jobs(monkeypatch)
    path = write_jsonl(tmp_path / "questions.jsonl", QUESTIONS)

    def command():
        before = thread_niceness()
        call_command("import_evalset", str(path), "--name", "niced", "--quiet", stdout=io.StringIO())
        return before

    before = _in_a_thread(command)
    assert seen == [settings.JOB_NICENESS]
    assert Job.objects.get().status == Job.Status.SUCCEEDED
    assert EvalSet.objects.filter(name="niced").exists()
    assert before == thread_niceness()


@pytest.mark.django_db(transaction=True)
def test_a_job_run_inline_in_a_request_keeps_the_requests_priority_and_the_embedded_thread_yields(
    settings, tmp_path, monkeypatch
):
    from evalcore.jobs.kinds import EvalSetImportParams, request_evalset_import

    settings.JOB_NICENESS = thread_niceness() + 7
    seen = _niceness_of_import_jobs(monkeypatch)
    path = str(write_jsonl(tmp_path / "questions.jsonl", QUESTIONS))

    def inline():  # EMBEDDED_TASKS_IN_THREAD off: the request's own thread runs the job and waits for it
        request_evalset_import(params=EvalSetImportParams(path=path, name="inline"))
        return thread_niceness()

    caller = _in_a_thread(inline)
    assert seen == [caller], "run inline, the job keeps the request thread's priority"

    settings.EMBEDDED_TASKS_IN_THREAD = True  # the embedded mode: a thread of its own, which yields
    job = request_evalset_import(params=EvalSetImportParams(path=path, name="threaded"))
    for _ in range(600):
        job.refresh_from_db()
        if job.finished:
            break
        threading.Event().wait(0.1)
    assert job.status == Job.Status.SUCCEEDED
    assert seen[1] == settings.JOB_NICENESS


def test_job_niceness_is_read_from_the_environment_and_checked_at_start_up(tmp_path):
    from .test_job_operations import _settings

    assert _settings({"VAR_DIR": str(tmp_path)}, "settings.JOB_NICENESS").stdout.strip() == "10"
    assert _settings({"VAR_DIR": str(tmp_path), "JOB_NICENESS": "0"}, "settings.JOB_NICENESS").stdout.strip() == "0"
    refused = _settings({"VAR_DIR": str(tmp_path), "JOB_NICENESS": "20"}, "settings.JOB_NICENESS")
    assert refused.returncode != 0 and "JOB_NICENESS=20 must be at most 19" in refused.stderr
