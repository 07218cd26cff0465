"""The judge client against the fake judge's faults: 429 with Retry-After, 500, timeouts, answers that are not JSON
or break the schema, broken bodies and slow answers. Transient faults are retried (after the time the endpoint
asked for), an invalid answer once with the error told to the model; what still fails is a failure of that item,
never of the job; concurrency and rate limits hold."""

from __future__ import annotations

import time

import pytest

from evalcore.judging.client import backoff, retry_after
from evalcore.models import Row
from evalcore.services.judge_configs import judge_config_create
from evalcore.services.judge_runs import judge_run
from tests.factories import make_literal_run, runnable_judge

EXPECTED = {f"q{i:04d}": 1.0 if i % 4 == 0 else 0.5 for i in range(8)}


def faithfulness(run) -> dict[str, float | None]:
    return {
        row.question.qid: row.scores["faithfulness"] for row in Row.objects.filter(run=run).select_related("question")
    }


def config_for(fake_judge, **changes):
    return judge_config_create(raw={**runnable_judge(fake_judge.base_url), **changes}).config


@pytest.mark.parametrize("fault", ["500", "timeout", "broken", "malformed", "schema", "slow"])
def test_a_fault_on_one_call_is_retried_and_the_run_is_the_same(fault, fake_judge, literal_run):
    fake = fake_judge.fake
    fake.timeout_seconds = 3.0
    fake.slow_seconds = 0.5
    config = config_for(fake_judge, limits={"concurrency": 1, "max_retries": 2, "timeout_seconds": 1.5})
    fake.script(fault)

    result = judge_run(run=literal_run, config=config)

    assert faithfulness(result.run) == EXPECTED
    assert result.totals["failed"] == 0 and result.totals["calls"] == 16
    extra = 0 if fault == "slow" else 1
    assert result.totals["http_requests"] == 16 + extra and len(fake.requests) == 16 + extra
    assert not fake.answered_twice()
    if fault in ("malformed", "schema"):  # the second try was told what was wrong
        retry = fake.requests[1]
        assert retry.key == fake.requests[0].key


def test_an_invalid_answer_is_retried_with_the_validation_error_told_to_the_model(fake_judge, literal_run):
    seen: list[list[dict]] = []
    fake_judge.fake.on_messages = seen.append
    fake_judge.fake.script("schema")

    judge_run(run=literal_run, config=config_for(fake_judge, limits={"concurrency": 1}))

    correction = seen[1][-1]["content"]
    assert seen[1][-2] == {"role": "assistant", "content": '{"verdict": "yes"}'}
    assert correction.startswith("That answer is not valid: the answer does not match the schema")
    assert "'supported' is a required property" in correction


def test_a_429_waits_for_retry_after_and_holds_back_every_request(fake_judge, literal_run):
    fake = fake_judge.fake
    fake.retry_after = "1"
    fake.script("429")

    started = time.monotonic()
    result = judge_run(run=literal_run, config=config_for(fake_judge, limits={"concurrency": 4}))

    assert faithfulness(result.run) == EXPECTED and result.totals["http_requests"] == 17
    sent = fake.rate_limited_at[0]  # after the 429, nothing new arrives until its Retry-After has passed
    # but the requests already on their way when the 429 was answered (at most concurrency − 1 of them; on
    # a busy machine they can land a little after it): a client that ignored Retry-After would send the
    # other 13 claims at once
    early = [t - sent for t in fake.received_at if 0 < t - sent < 0.95]
    assert len(early) <= 3, early
    assert max(fake.received_at) - sent >= 0.95 and time.monotonic() - started >= 1.0


def test_an_item_that_keeps_failing_is_a_failure_of_that_item_not_of_the_job(db, fake_judge, tmp_path):
    # a claim holding the marker word gets a 500 every time: its row has no faithfulness, the others do
    run = make_literal_run(
        folder=tmp_path, n=4, claims={"q0001": [{"text": "Plan p001 fault500 refunds.", "supported": True}]}
    )
    config = config_for(fake_judge, limits={"concurrency": 2, "max_retries": 2})

    result = judge_run(run=run, config=config)

    scores = faithfulness(result.run)
    assert scores["q0001"] is None and scores["q0000"] == 1.0 and scores["q0002"] == 0.5
    failed = Row.objects.get(run=result.run, question__qid="q0001")
    assert failed.claims[0]["supported"] is None and "HTTP 500" in failed.claims[0]["error"]
    assert "still failing after 2 retries" in failed.metadata["judge_failures"][0]["error"]
    assert result.totals["failed"] == 1 and result.totals["failed_rows"] == 1
    assert "The judge failed on 1 call(s), in 1 row(s)" in result.message
    assert result.run.summary["slices"]["all"]["metrics"]["faithfulness"]["n"] == 3


def test_an_answer_invalid_twice_fails_that_item(db, fake_judge, tmp_path):
    run = make_literal_run(folder=tmp_path, n=2, claims={"q0000": [{"text": "faultmalformed", "supported": True}]})

    result = judge_run(run=run, config=config_for(fake_judge))

    failed = Row.objects.get(run=result.run, question__qid="q0000")
    assert failed.claims[0]["error"].startswith("invalid answer twice: the answer is not valid JSON")


def test_no_more_requests_are_in_flight_than_the_concurrency(db, fake_judge, tmp_path):
    run = make_literal_run(folder=tmp_path, n=16)
    fake_judge.fake.latency = 0.05

    judge_run(run=run, config=config_for(fake_judge, limits={"concurrency": 3}))

    assert fake_judge.fake.max_in_flight == 3


def test_requests_per_minute_are_paced(db, fake_judge, tmp_path):
    run = make_literal_run(folder=tmp_path, n=6)

    judge_run(run=run, config=config_for(fake_judge, limits={"concurrency": 8, "requests_per_minute": 600}))

    times = fake_judge.fake.received_at
    # 10 a second: 11 intervals of 0.1 s between the first and the last start (less the first connection's set-up)
    assert len(times) == 12 and times[-1] - times[0] >= 11 * 0.1 - 0.1


def test_retry_after_in_seconds_milliseconds_or_a_date_and_backoff_without_it():
    import random
    from email.utils import formatdate

    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert 3.0 <= retry_after({"retry-after": formatdate(time.time() + 5, usegmt=True)}) <= 5.0
    assert retry_after({}) is None and retry_after({"retry-after": "soon"}) is None
    rng = random.Random(1)
    waits = [backoff(n, rng) for n in range(8)]
    assert 0.25 <= waits[0] <= 0.5 and 4 <= waits[4] <= 8 and max(waits) <= 30


def test_tokens_per_minute_are_a_bucket_debited_by_estimates_and_corrected_by_what_was_used():
    import asyncio

    from evalcore.judging.client import RateLimiter

    now = [0.0]
    started: list[float] = []

    async def sleep(seconds: float) -> None:
        now[0] += seconds

    async def run() -> None:
        limiter = RateLimiter(requests_per_minute=None, tokens_per_minute=600, clock=lambda: now[0], sleep=sleep)
        for _ in range(4):  # 300 tokens each: two fit in the full bucket, then 10 tokens a second refill it
            await limiter.acquire(300)
            started.append(now[0])
        limiter.settle(300, 900)  # the last call used 600 more than estimated: the next waits for them
        await limiter.acquire(300)
        started.append(now[0])

    asyncio.run(run())

    assert started[:4] == pytest.approx([0.0, 0.0, 30.0, 60.0])
    assert started[4] == pytest.approx(60.0 + 90.0)
