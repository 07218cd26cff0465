"""The planner at evalcore's doors: every review decision says what would settle it (stored with the decision,
on the comparison page, in ``gate`` and ``gate --json``, in the API), and the planner page and the ``plan``
command answer both questions with no data, the assumptions shown."""

from __future__ import annotations

import html
import io
import json

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from evalcore.engine import settle_review
from evalcore.models import GateDecisionRecord
from evalcore.selectors import run_rows_frame
from evalcore.services.comparisons import compare_runs
from evalcore.services.planning import plan_labels, plan_questions

from .conftest import db_counts, gate

pytestmark = pytest.mark.django_db


@pytest.fixture
def mixed(synthetic, settings):
    """base vs mixed, gated on the data alone: faithfulness ends in review."""
    settings.GATE_JUDGE_POLICY = "off"
    return compare_runs(base=synthetic["base"], candidate=synthetic["mixed"]).comparison


def scores(run, metric, slice_=None):
    frame = run_rows_frame(run)
    if slice_:
        frame = frame[frame["type"] == slice_]
    return frame[metric].to_numpy(dtype=float)


def test_a_review_decision_stores_the_paired_questions_that_would_settle_it(mixed, synthetic):
    faith = mixed.decisions.get(metric="faithfulness", slice="all")
    assert faith.status == "review"
    expected = settle_review(
        scores(synthetic["base"], "faithfulness"), scores(synthetic["mixed"], "faithfulness"), margin=0.02, available=40
    )
    assert faith.to_settle["questions"] == expected.questions > 40
    assert faith.to_settle["outcome"] == expected.outcome and faith.to_settle["power"] == 0.8
    assert faith.to_settle["sentence"] == expected.sentence(observed=True)
    assert faith.to_settle["sentence"].startswith("at the observed spread (a per-question sd of")
    assert faith.to_settle["sentence"].endswith("; the eval set has 40")


def test_a_slice_in_review_counts_the_slices_questions_and_decisions_that_settled_carry_nothing(mixed, synthetic):
    for record in mixed.decisions.all():
        if record.status != "review":
            assert record.to_settle is None, record
        elif record.slice != "all":
            assert record.to_settle["sentence"].endswith(f"; slice {record.slice} has 20")
            expected = settle_review(
                scores(synthetic["base"], record.metric, record.slice),
                scores(synthetic["mixed"], record.metric, record.slice),
                margin=record.margin,
                available=20,
            )
            assert record.to_settle["questions"] == expected.questions
    assert mixed.decisions.filter(status="review").exclude(slice="all").exists()


def test_a_review_the_judge_policy_made_is_settled_by_validating_the_judge_not_by_more_questions(synthetic, settings):
    settings.GATE_JUDGE_POLICY = "review"
    comparison = compare_runs(base=synthetic["base"], candidate=synthetic["same"]).comparison
    faith = comparison.decisions.get(metric="faithfulness", slice="all")
    assert faith.status == "review" and faith.data_status == "pass"
    assert faith.to_settle["questions"] is None
    assert faith.to_settle["sentence"].startswith(
        "more paired questions would not settle this: the data alone say pass"
    )
    assert "Validate that judge against people" in faith.to_settle["sentence"]


def test_reviews_the_judge_policy_made_are_named_together_once_on_the_page_and_in_the_table(
    synthetic, settings, owner_client
):
    settings.GATE_JUDGE_POLICY = "review"
    comparison = compare_runs(base=synthetic["base"], candidate=synthetic["same"]).comparison
    page = owner_client.get(reverse("evalcore:comparison", args=[comparison.pk])).content.decode()
    sentence = (
        "In review because of the judge that scored them, whatever the data say: faithfulness (overall, a, b). "
        "More paired questions would not settle these"
    )
    assert html.escape(sentence) in page
    assert page.count("would not settle") == 1
    _, out, _ = gate("--base", "base", "--candidate", "same", "--evalset", "syn")
    assert (
        "to settle the rest: in review because of the judge that scored them, whatever the data say: faithfulness (overall, a, b)"
        in out
    )


def test_the_sentence_is_in_the_gate_table_and_its_json(synthetic, settings):
    settings.GATE_JUDGE_POLICY = "off"
    code, out, _ = gate("--base", "base", "--candidate", "mixed", "--evalset", "syn")
    record = GateDecisionRecord.objects.get(metric="faithfulness", slice="all")
    assert code == 3
    assert f"to settle faithfulness: {record.to_settle['sentence']}" in out
    code, out, _ = gate("--base", "base", "--candidate", "mixed", "--evalset", "syn", "--json")
    data = json.loads(out)
    faith = next(d for d in data["decisions"] if d["metric"] == "faithfulness" and d["slice"] == "all")
    assert faith["to_settle"]["questions"] > 40 and faith["to_settle"]["sentence"].endswith("the eval set has 40")


def test_the_sentence_is_on_the_comparison_page_and_in_the_api(mixed, owner_client):
    faith = mixed.decisions.get(metric="faithfulness", slice="all")
    page = owner_client.get(reverse("evalcore:comparison", args=[mixed.pk])).content.decode()
    assert "What would settle the review" in page
    assert html.escape(faith.to_settle["sentence"]) in page
    api = owner_client.get(reverse("api-comparison", args=[mixed.pk])).json()
    found = next(d for d in api["decisions"] if d["metric"] == "faithfulness" and d["slice"] == "all")
    assert found["to_settle"] == faith.to_settle


def test_a_comparison_that_passed_shows_nothing_to_settle(synthetic, settings, owner_client):
    settings.GATE_JUDGE_POLICY = "off"
    # 40 unchanged questions, 20 a slice: only a wide margin can be shown (Tango's interval is ±0.16 on 20)
    comparison = compare_runs(base=synthetic["base"], candidate=synthetic["same"], margin=0.5).comparison
    assert comparison.overall == "pass"
    page = owner_client.get(reverse("evalcore:comparison", args=[comparison.pk])).content.decode()
    assert "What would settle the review" not in page


# ---------------------------------------------------------------------------------------------
# The planner page and the plan command: no data needed
# ---------------------------------------------------------------------------------------------


def test_the_planner_page_answers_both_questions_with_its_defaults_and_shows_the_assumptions(owner_client):
    response = owner_client.get(reverse("evalcore:plan"))
    page = response.content.decode()
    labels = plan_labels(size=240, failure_share=0.15)
    questions = plan_questions(discordance=0.10)
    assert response.status_code == 200
    assert html.escape(labels.summary) in page and html.escape(labels.assumptions) in page
    assert html.escape(questions.summary[0].upper() + questions.summary[1:]) in page
    assert html.escape(questions.assumptions) in page


def test_the_planner_page_plans_what_is_typed_in_and_answers_htmx_with_the_part_that_changed(owner_client):
    query = {
        "labels-size": "800",
        "labels-failure_share": "0.05",
        "labels-miss_rate": "0.2",
        "labels-false_fail_rate": "0.02",
        "labels-heldout_fraction": "0.3",
        "labels-overlap": "2",
        "labels-target": "0.1",
        "labels-statistic": "miss_rate",
        "partial": "labels",
    }
    response = owner_client.get(reverse("evalcore:plan"), query, headers={"HX-Request": "true"})
    fragment = response.content.decode()
    expected = plan_labels(size=800, failure_share=0.05, miss_rate=0.2, false_fail_rate=0.02, overlap=2, target=0.1)
    assert html.escape(expected.summary) in fragment
    assert "labels at 2 per item" in expected.summary
    assert "<html" not in fragment and "Paired questions a comparison needs" not in fragment


def test_the_planner_page_says_what_is_wrong_with_the_assumptions(owner_client):
    bad = {"questions-kind": "graded", "questions-change": "0", "questions-margin": "0.02", "questions-power": "0.8"}
    page = owner_client.get(reverse("evalcore:plan"), bad).content.decode()
    assert "a graded metric needs the standard deviation of the per-question differences" in page
    impossible = {"labels-size": "100", "labels-failure_share": "2", "labels-target": "0.05"}
    page = owner_client.get(reverse("evalcore:plan"), impossible).content.decode()
    assert "Fix the fields marked above" in page


def test_reading_the_planner_page_changes_nothing_and_it_takes_no_post(owner_client):
    before = db_counts()
    assert owner_client.get(reverse("evalcore:plan")).status_code == 200
    assert owner_client.post(reverse("evalcore:plan")).status_code == 405
    assert db_counts() == before


def test_the_planner_page_is_for_eval_owners(annotator_client):
    assert annotator_client.get(reverse("evalcore:plan")).status_code == 403


def plan(*args: str) -> str:
    out = io.StringIO()
    call_command("plan", *args, stdout=out)
    return out.getvalue()


def test_the_plan_command_plans_labels_in_words_and_json():
    out = plan(
        "labels", "--size", "240", "--failure-share", "0.25", "--miss-rate", "0.44", "--false-fail-rate", "0.053"
    )
    expected = plan_labels(size=240, failure_share=0.25, miss_rate=0.44, false_fail_rate=0.053)
    assert out.startswith(f"{expected.summary}.")
    assert "240 items: miss rate ± 9 points, kappa ± 0.11" in out
    assert f"assuming {expected.assumptions}" in out
    data = json.loads(plan("labels", "--size", "240", "--failure-share", "0.25", "--json"))
    assert data["items"] == 240 and data["report"]["miss_rate"] == pytest.approx(
        plan_labels(size=240, failure_share=0.25).plan.report.miss_rate
    )
    assert data["needed"]["items"] > 240 and data["assumptions"]["source"] == "typed in"


def test_the_plan_command_plans_questions_and_what_the_eval_set_can_do():
    out = plan("questions", "--discordance", "0.1", "--available", "600")
    assert "about 1,963 paired questions would settle this (pass, with 80 % power); the eval set has 600" in out
    assert "With the 600 questions there are, the gate would pass 34 % of the time" in out
    data = json.loads(plan("questions", "--sd", "0.3", "--change", "-0.05", "--json"))
    assert data["outcome"] == "block" and data["kind"] == "graded"
    assert data["questions"] == plan_questions(kind="graded", sd=0.3, change=-0.05).plan.questions
    assert np.isclose(data["sd"], 0.3)


def test_the_plan_command_refuses_assumptions_it_cannot_plan_with():
    with pytest.raises(CommandError, match="carries no information"):
        plan("labels", "--failure-share", "0.1", "--miss-rate", "0.6", "--false-fail-rate", "0.5")
    with pytest.raises(CommandError, match="flip"):
        plan("questions", "--discordance", "0.01", "--change", "0.2")


def test_the_api_plans_labels_and_questions_as_the_page_does(owner_client):
    labels = owner_client.get(reverse("api-plan-labels"), {"size": 400, "failure_share": 0.05, "target": 0.1}).json()
    assert labels["summary"] == plan_labels(size=400, failure_share=0.05, target=0.1).summary
    assert labels["report"]["items"] == 400 and labels["assumptions"]["source"] == "typed in"
    questions = owner_client.get(reverse("api-plan-questions"), {"discordance": 0.1, "available": 600}).json()
    assert questions["questions"] == 1963 and questions["power_with_available"] == pytest.approx(0.34, abs=0.01)
    assert questions["assumptions_in_words"] == plan_questions(discordance=0.1, available=600).assumptions


def test_the_api_says_what_is_wrong_with_a_plan_request(owner_client):
    bad = owner_client.get(reverse("api-plan-labels"), {"failure_share": 3})
    assert bad.status_code == 400 and "failure_share" in bad.json()
    refused = owner_client.get(reverse("api-plan-questions"), {"kind": "graded", "sd": "", "discordance": ""})
    assert refused.status_code == 400 and "standard deviation" in refused.json()["detail"]


def test_the_planning_api_is_for_eval_owners(annotator_client):
    assert annotator_client.get(reverse("api-plan-labels")).status_code == 403
    assert annotator_client.get(reverse("api-plan-questions")).status_code == 403
