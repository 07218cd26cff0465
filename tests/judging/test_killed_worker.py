"""A Celery worker killed in the middle of a judge run (real worker processes, Redis, PostgreSQL): the job resumes
on the next worker from the cache, to the same verdicts, and the fake judge answers no call twice.

The kill happens while no answer is on its way: the fake judge has answered the first 30 calls (all written to
the cache) and holds the next ones. Those held calls die with the worker (the fake judge counts them as abandoned,
not answered) and are asked again after the resume; every other call is answered exactly once.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from evalcore.jobs.kinds import JudgeRunParams, request_judge_run
from evalcore.jobs.task import run_job
from evalcore.models import Job, JudgeCall, Row, Run
from evalcore.services.judge_configs import judge_config_create
from tests.evalcore.conftest import start_celery_worker, stop_celery_worker
from tests.evalcore.test_celery_worker import own_queue, wait_for
from tests.factories import make_literal_run, runnable_judge

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

ROWS = 40  # 80 claims


def until(condition, timeout: float, what) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")
        time.sleep(0.05)


def test_a_killed_worker_s_judge_run_resumes_on_the_next_worker_with_no_call_twice(settings, tmp_path, fake_judge):
    fake = fake_judge.fake
    fake.latency = 0.05
    run = make_literal_run(folder=tmp_path, n=ROWS)
    config = judge_config_create(raw={**runnable_judge(fake_judge.base_url), "limits": {"concurrency": 4}}).config
    fake.hold_after(30)
    log_path = tmp_path / "workers.log"
    with own_queue(settings) as queue:
        first = start_celery_worker(queue, log_path, JOB_STALE_SECONDS="2")
        second = None
        try:
            job = request_judge_run(params=JudgeRunParams(run=run.pk, judge_config=config.pk), start=False)
            run_job.delay(job.pk)
            until(
                lambda: fake.total_answered == 30 and fake.held >= 1,
                90,
                lambda: (
                    f"30 answers and a held call ({fake.total_answered} answered; job {Job.objects.get(pk=job.pk)}: "
                    f"{Job.objects.get(pk=job.pk).error})\n{log_path.read_text()[-3000:]}"
                ),
            )
            until(lambda: JudgeCall.objects.count() == 30, 10, "the 30 answers in the cache")

            os.kill(first.pid, signal.SIGKILL)
            first.wait(timeout=10)
            fake.release()
            assert Job.objects.get(pk=job.pk).status == "running"  # the dead worker left it running
            time.sleep(2.5)  # its heartbeat goes stale (JOB_STALE_SECONDS=2)

            second = start_celery_worker(queue, log_path, JOB_STALE_SECONDS="2")
            finished = wait_for(job.pk, timeout=120)
        finally:
            stop_celery_worker(first)
            if second is not None:
                stop_celery_worker(second)
    log = log_path.read_text()
    assert finished.status == "succeeded", f"{finished.error}\n--- workers ---\n{log[-3000:]}"
    assert "lost its worker" in log
    assert fake.answered_twice() == [] and fake.total_answered == 2 * ROWS
    assert sum(r.outcome == "abandoned" for r in fake.requests) >= 1
    assert finished.result["from_cache"] == 30 and finished.result["calls"] == 2 * ROWS - 30
    new = Run.objects.get(pk=finished.result["run_id"])
    faithfulness = dict(Row.objects.filter(run=new).values_list("question__qid", "scores__faithfulness"))
    assert faithfulness == {f"q{i:04d}": 1.0 if i % 4 == 0 else 0.5 for i in range(ROWS)}
