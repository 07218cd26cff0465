"""Re-score the baseline: a comparison whose runs were scored by different judge configs leaves the judge metrics
out ("re-score the baseline first"); one button, call or command judges the older run with the newer run's config
(cached calls are free) and opens the comparison with every metric."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from evalcore.jobs.kinds import GateParams, RescoreParams, request_gate, request_rescore_baseline
from evalcore.models import Comparison, Job, Run
from evalcore.services.judge_runs import judge_run
from evalcore.services.problems import UserFacingError
from tests.factories import OTHER_JUDGE, make_literal_run, make_run


@pytest.fixture
def runs(judge, tmp_path, fake_judge):
    """'base' (judged elsewhere by JUDGE, every claim passed), then 'candidate': the same system judged by the tool."""
    base = make_literal_run(folder=tmp_path)
    candidate = judge_run(run=base, config=judge, name="candidate").run
    assert candidate.created_at >= base.created_at
    return base, candidate


def gate(base: Run, candidate: Run) -> Comparison:
    job = request_gate(params=GateParams(base=base.pk, candidate=candidate.pk))
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    return Comparison.objects.get(pk=job.result["comparison_id"])


def test_the_comparison_page_offers_to_re_score_and_the_button_opens_the_new_comparison(runs, owner_client, fake_judge):
    base, candidate = runs
    refused = gate(base, candidate)
    assert "faithfulness" not in refused.metrics and "Re-score the baseline" in refused.excluded_metrics["faithfulness"]
    page = owner_client.get(f"/comparisons/{refused.pk}/").content.decode()
    assert 'action="/compare/rescore/"' in page and f'name="comparison" value="{refused.pk}"' in page
    answered = fake_judge.fake.total_answered

    response = owner_client.post(
        "/compare/rescore/", {"base": base.pk, "candidate": candidate.pk, "comparison": refused.pk, "claims": "keep"}
    )

    job = Job.objects.get(pk=int(response["Location"].split("/")[2]))
    assert job.status == "succeeded", job.error
    comparison = Comparison.objects.get(pk=job.result["comparison_id"])
    rescored = comparison.base
    assert rescored.derived_from == base and rescored.judge_config == candidate.judge_config
    assert comparison.candidate == candidate and "faithfulness" in comparison.metrics
    assert fake_judge.fake.total_answered == answered  # the same claims were judged for the candidate: all cached
    assert job.result["from_cache"] == 16 and job.result["calls"] == 0
    opened = owner_client.get(response["Location"]).content.decode()
    assert f"/comparisons/{comparison.pk}/" in opened


def test_the_api_and_the_command_re_score_too(runs, owner_client):
    base, candidate = runs
    refused = gate(base, candidate)

    api = owner_client.post(
        "/api/rescore/",
        {"base": "base", "candidate": "candidate", "comparison": refused.pk},
        content_type="application/json",
    )
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(SystemExit) as stop:  # the same rule as gate: 0 pass, 3 review, 4 block
        call_command(
            "rescore_baseline", "--base", "base", "--candidate", "candidate", "--evalset", "lit", stdout=out, stderr=err
        )

    assert api.status_code == 202
    assert (
        Comparison.objects.get(pk=Job.objects.get(pk=api.json()["id"]).result["comparison_id"]).candidate == candidate
    )
    assert stop.value.code in (3, 4) and "faithfulness" in out.getvalue() and "base-by-literal-judge" in out.getvalue()
    assert Run.objects.filter(name="base-by-literal-judge").count() == 1  # the second asked for the same run


def test_a_comparison_refused_whole_for_different_judges_offers_the_re_score_on_the_compare_page(
    judge, tmp_path, owner_client, fake_judge
):
    questions_only_judged = make_literal_run(folder=tmp_path, n=4)
    candidate = judge_run(run=questions_only_judged, config=judge, name="candidate").run
    form = {
        "base": questions_only_judged.pk,
        "candidate": candidate.pk,
        "slice_by": "none",
        "margin": "0.02",
        "metrics": "faithfulness",
    }

    page = owner_client.post("/compare/", form)

    assert page.status_code == 400 and "Re-score the baseline" in page.content.decode()
    assert 'action="/compare/rescore/"' in page.content.decode()


def test_runs_with_the_same_judge_or_a_newer_judge_that_ran_elsewhere_are_refused(runs, tmp_path):
    base, candidate = runs
    same = judge_run(run=base, config=candidate.judge_config, claims="split", name="same-judge").run
    with pytest.raises(UserFacingError, match="same judge config"):
        request_rescore_baseline(params=RescoreParams(base=candidate.pk, candidate=same.pk))
    elsewhere = make_run(
        folder=tmp_path / "elsewhere",
        rows=[
            {"id": f"q{i:04d}", "retrieved": [f"doc-p{i:03d}"], "claims": [{"text": "x", "supported": True}]}
            for i in range(8)
        ],
        evalset="lit",
        name="elsewhere",
        k=2,
        judge_config=OTHER_JUDGE,
    )
    with pytest.raises(UserFacingError, match="ran elsewhere"):
        request_rescore_baseline(params=RescoreParams(base=candidate.pk, candidate=elsewhere.pk))
    assert not Job.objects.filter(kind="rescore_baseline").exists()
