"""judge_run: a run scored by a runnable judge config becomes a new run with lineage; the cache makes a re-run, a
resumed job and a re-scored baseline pay for no call twice; cancel stops between batches; every door (command,
API, page) asks for the one job, with the estimate first and no call on a read."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from evalcore.jobs.errors import JobCancelled
from evalcore.jobs.kinds import JudgeRunParams, request_judge_run
from evalcore.jobs.runner import job_cancel, job_run
from evalcore.models import Job, JudgeCall, Row, Run
from evalcore.services.judge_runs import judge_run, judge_run_estimate
from evalcore.services.problems import UserFacingError
from tests.factories import make_literal_run

from .test_faults import EXPECTED, faithfulness


def test_judging_a_run_makes_a_new_run_with_lineage_and_faithfulness_computed_as_on_import(
    judge, literal_run, fake_judge
):
    result = judge_run(run=literal_run, config=judge)

    new = result.run
    assert new.name == "base-by-literal-judge" and new.derived_from == literal_run and new.judge_config == judge
    assert new.description == "base, re-scored by judge literal-judge (claims keep)"
    assert faithfulness(new) == EXPECTED
    assert faithfulness(literal_run) == {q: 1.0 for q in EXPECTED}  # the source run is unchanged
    row = Row.objects.get(run=new, question__qid="q0001")
    assert row.claims[1] == {
        "text": "Plan p001 ships overnight.",
        "supported": False,
        "rationale": "not in the context: overnight",
    }
    old = Row.objects.get(run=literal_run, question__qid="q0001")
    assert {k: v for k, v in row.scores.items() if k != "faithfulness"} == {
        k: v for k, v in old.scores.items() if k not in ("faithfulness", "answer_relevance")
    }
    assert new.summary["slices"]["all"]["metrics"]["faithfulness"]["mean"] == pytest.approx(0.625)
    assert "answer_relevance" not in new.summary["metrics"] and "Not carried over" in result.message
    assert result.totals["calls"] == 16 and result.totals["cost"] > 0 and new.metadata["judging"]["calls"] == 16


def test_splitting_answers_into_claims_first(judge, literal_run, fake_judge):
    result = judge_run(run=literal_run, config=judge, claims="split")

    row = Row.objects.get(run=result.run, question__qid="q0004")
    assert [c["text"] for c in row.claims] == ["Plan p004 refunds within thirty days.", "Plan p004 ships worldwide."]
    assert faithfulness(result.run) == EXPECTED
    kinds = [r.kind for r in fake_judge.fake.requests]
    assert kinds.count("claims") == 8 and kinds.count("verdict") == 16


def test_a_re_run_pays_for_no_call_twice(judge, literal_run, fake_judge):
    judge_run(run=literal_run, config=judge, claims="split")
    answered = fake_judge.fake.total_answered

    again = judge_run(run=literal_run, config=judge, claims="split", name="again")
    kept = judge_run(run=literal_run, config=judge, claims="keep", name="kept")  # the same claims: the same calls

    assert fake_judge.fake.total_answered == answered and not fake_judge.fake.answered_twice()
    assert again.totals["calls"] == 0 and again.totals["from_cache"] == 24 and kept.totals["from_cache"] == 16
    assert faithfulness(again.run) == faithfulness(kept.run) == EXPECTED


def test_a_stopped_run_resumes_from_the_cache_without_calling_twice(judge, fake_judge, tmp_path):
    literal_run = make_literal_run(folder=tmp_path / "long", n=24, evalset="long")
    fake_judge.fake.latency = 0.3  # 48 calls, 4 at a time (3.6 s): the stop check (each second) comes before the end
    with pytest.raises(JobCancelled):
        judge_run(run=literal_run, config=judge, should_stop=lambda: fake_judge.fake.total_answered >= 6)
    assert not Run.objects.filter(name="base-by-literal-judge").exists()  # nothing written but the cache
    paid = JudgeCall.objects.count()
    assert 6 <= paid < 48

    result = judge_run(run=literal_run, config=judge)

    assert result.totals["from_cache"] == paid and result.totals["calls"] == 48 - paid
    expected = {f"q{i:04d}": 1.0 if i % 4 == 0 else 0.5 for i in range(24)}
    assert not fake_judge.fake.answered_twice() and faithfulness(result.run) == expected


def test_cancelling_a_running_job_stops_it_between_batches_and_asking_again_resumes(judge, fake_judge, tmp_path):
    literal_run = make_literal_run(folder=tmp_path / "long", n=24, evalset="long")
    fake_judge.fake.latency = (
        0.3  # 48 calls, 4 at a time (3.6 s): the stop check (each second) comes well before the end
    )
    job = request_judge_run(params=JudgeRunParams(run=literal_run.pk, judge_config=judge.pk), start=False)
    Job.objects.filter(pk=job.pk).update(cancel_requested_at=timezone.now())

    cancelled = job_run(job.pk)

    assert cancelled.status == "cancelled" and cancelled.result == {"cancelled": True}
    assert 0 < JudgeCall.objects.count() < 48
    again = request_judge_run(params=JudgeRunParams(run=literal_run.pk, judge_config=judge.pk))
    again.refresh_from_db()
    assert again.status == "succeeded" and again.result["from_cache"] > 0 and not fake_judge.fake.answered_twice()


def test_a_queued_job_is_cancelled_at_once_and_a_finished_one_cannot_be(judge, literal_run, owner_client):
    job = request_judge_run(params=JudgeRunParams(run=literal_run.pk, judge_config=judge.pk), start=False)

    assert job_cancel(job=job).status == "cancelled"
    assert job_run(job.pk).status == "cancelled"  # a worker that picks it up later leaves it alone
    with pytest.raises(UserFacingError, match="already cancelled"):
        job_cancel(job=Job.objects.get(pk=job.pk))
    assert owner_client.post(f"/api/jobs/{job.pk}/cancel/").status_code == 409


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"claims": "split", "config": {"claim_prompt": ""}}, "no claim prompt"),
        ({"claims": "whole"}, "claims must be"),
        ({"name": "base"}, "already exists"),
        ({"config": {"endpoint_kind": ""}}, "ran elsewhere"),
    ],
)
def test_what_cannot_be_judged_is_refused_before_a_job_exists(literal_run, fake_judge, params, says):
    from evalcore.services.judge_configs import judge_config_create, normalize_judge_config
    from tests.factories import runnable_judge

    raw = {**runnable_judge(fake_judge.base_url), **params.get("config", {})}
    if raw["endpoint_kind"]:
        config = judge_config_create(raw=raw).config
    else:
        from evalcore.models import JudgeConfig

        config = JudgeConfig.objects.create(**normalize_judge_config({k: raw[k] for k in ("model", "prompt")}))
    with pytest.raises(UserFacingError, match=says):
        request_judge_run(
            params=JudgeRunParams(
                run=literal_run.pk, judge_config=config.pk, claims=params.get("claims", "keep"), name=params.get("name")
            )
        )
    assert not Job.objects.exists() and not fake_judge.fake.requests


def test_the_estimate_comes_from_a_sample_and_calls_nothing(judge, literal_run, fake_judge, owner_client):
    estimate = judge_run_estimate(run=literal_run, config=judge, claims="keep")
    assert estimate.calls == 16 and estimate.cached_calls == 0 and estimate.cost > 0 and estimate.rows == 8

    page = owner_client.get(f"/runs/{literal_run.pk}/judge/?judge_config={judge.pk}&claims=keep")
    api = owner_client.get(f"/api/runs/{literal_run.pk}/judge/estimate/?judge_config={judge.pk}")

    assert page.status_code == 200 and "16 calls (0 already in the cache, free)" in page.content.decode()
    assert api.status_code == 200 and api.json()["calls"] == 16
    assert not fake_judge.fake.requests and not JudgeCall.objects.exists() and not Job.objects.exists()
    judge_run(run=literal_run, config=judge)
    assert judge_run_estimate(run=literal_run, config=judge, claims="keep").cached_calls == 16


def test_the_command_prints_the_estimate_then_judges(judge, literal_run, fake_judge):
    out, err = io.StringIO(), io.StringIO()
    call_command("judge_run", "--run", "base", "--judge-config", "literal-judge", "--estimate", stdout=out, stderr=err)
    assert "estimate: 16 calls" in err.getvalue() and not fake_judge.fake.requests

    call_command("judge_run", "--run", "base", "--judge-config", "literal-judge", "--quiet", stdout=out, stderr=err)

    assert "Created run 'base-by-literal-judge'" in out.getvalue()
    with pytest.raises(CommandError, match="already exists"):
        call_command("judge_run", "--run", "base", "--judge-config", "literal-judge", stdout=out, stderr=err)


def test_the_api_and_the_page_start_the_job(judge, literal_run, fake_judge, owner_client):
    api = owner_client.post(
        f"/api/runs/{literal_run.pk}/judge/",
        {"judge_config": judge.pk, "name": "via-api"},
        content_type="application/json",
    )
    page = owner_client.post(
        f"/runs/{literal_run.pk}/judge/", {"judge_config": judge.pk, "claims": "split", "name": "via-page"}
    )

    assert api.status_code == 202 and Job.objects.get(pk=api.json()["id"]).status == "succeeded"
    assert page.status_code == 302 and page["Location"].startswith("/jobs/")
    job = Job.objects.get(pk=int(page["Location"].split("/")[2]))
    assert job.status == "succeeded" and Run.objects.get(pk=job.result["run_id"]).name == "via-page"
    shown = owner_client.get(page["Location"]).content.decode()
    assert "Open the result" in shown and "calls made" in shown


def test_starting_from_the_estimate_page_starts_the_job_with_what_the_owner_chose(
    judge, literal_run, fake_judge, owner_client
):
    """The start form's POST goes to the estimate page's own URL (?judge_config=...): its fields still win."""
    url = f"/runs/{literal_run.pk}/judge/?judge_config={judge.pk}&claims=split"
    estimate = owner_client.get(url)
    assert estimate.status_code == 200 and 'id="estimate"' in estimate.content.decode()

    page = owner_client.post(url, {"judge_config": judge.pk, "claims": "split", "name": "from-the-estimate"})

    assert page.status_code == 302 and page["Location"].startswith("/jobs/")
    job = Job.objects.get(pk=int(page["Location"].split("/")[2]))
    assert job.status == "succeeded" and Run.objects.get(pk=job.result["run_id"]).name == "from-the-estimate"
