"""The judge policy at the gate: a decision on a judge metric carries the validation of the judge
that scored both runs, and an unvalidated or unfit judge cannot pass or block a judge metric alone
(``review`` by default; ``warn`` and ``off`` on request), at every door, logged with the decision."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from evalcore.models import Comparison, GateDecisionRecord, JudgeConfig
from evalcore.services import judge_fitness
from evalcore.services.comparisons import compare_runs
from evalcore.services.judge_fitness import FIT, NOT_FIT, CorrectedPassRate, JudgeValidation

from .conftest import gate

pytestmark = pytest.mark.django_db


class KnownValidations:
    """A validation source that answers from a dict by config hash (as the labelling app answers from its campaigns)."""

    def __init__(self, by_hash: dict[str, JudgeValidation]) -> None:
        self.by_hash = by_hash

    def validation(self, config: JudgeConfig, metric: str = "faithfulness") -> JudgeValidation | None:
        return self.by_hash.get(config.config_hash)

    def corrected_pass_rate(self, config: JudgeConfig, run) -> CorrectedPassRate | None:
        if config.config_hash not in self.by_hash:
            return None
        return CorrectedPassRate(run=run.name, raw=0.9, corrected=0.8, low=0.75, high=0.85, items=100)


@pytest.fixture
def validated_as(monkeypatch, synthetic):
    """Register what people found of the synthetic runs' judge, for the test's duration."""

    def register(status: str) -> JudgeValidation:
        config = synthetic["base"].judge_config
        validation = JudgeValidation(
            status=status,
            judge=str(config),
            config_hash=config.config_hash,
            unit_word="claims",
            n=240,
            failures=77,
            missed=28,
            kappa=0.6,
            kappa_low=0.49,
            kappa_high=0.71,
            miss_rate=28 / 77,
            miss_low=0.27,
            miss_high=0.48,
            campaign="faith-q3",
            source="judge report",
            validated_at="2026-11-02T10:00:00+00:00",
        )
        monkeypatch.setattr(judge_fitness._REGISTRY, "sources", [KnownValidations({config.config_hash: validation})])
        return validation

    return register


def faithfulness(comparison: Comparison) -> GateDecisionRecord:
    return comparison.decisions.get(metric="faithfulness", slice="all")


def test_an_unvalidated_judge_sends_its_metric_to_review_whatever_the_data_say(synthetic, settings, monkeypatch):
    monkeypatch.setattr(judge_fitness._REGISTRY, "sources", [])
    assert settings.GATE_JUDGE_POLICY == "review"  # the default
    comparison = compare_runs(base=synthetic["base"], candidate=synthetic["worse"], slice_by=None).comparison
    faith = faithfulness(comparison)
    assert (faith.data_status, faith.status) == ("block", "review")
    assert "was never validated against people" in faith.message and "the data alone say block" in faith.message
    assert faith.judge_validation["status"] == "unvalidated"
    recall = comparison.decisions.get(metric="recall@1")
    assert (
        recall.status == recall.data_status and recall.judge_validation is None
    )  # deterministic metrics: the data decide
    assert comparison.overall == "review" and comparison.judge_policy == "review"


def test_an_unfit_judge_turns_a_pass_into_review_and_says_why_in_words(synthetic, validated_as):
    validated_as(NOT_FIT)
    comparison = compare_runs(base=synthetic["base"], candidate=synthetic["same"], slice_by=None).comparison
    faith = faithfulness(comparison)
    assert (faith.data_status, faith.status) == ("pass", "review")
    assert "misses 36 % of unsupported claims (CI 27–48 %)" in faith.message and "not fit to gate" in faith.message
    assert "campaign faith-q3" in faith.message
    assert faith.judge_validation["kappa"] == 0.6 and faith.judge_validation["campaign"] == "faith-q3"


def test_a_fit_judge_leaves_the_decision_to_the_data_and_shows_the_corrected_rates(synthetic, validated_as):
    validated_as(FIT)
    comparison = compare_runs(base=synthetic["base"], candidate=synthetic["worse"], slice_by=None).comparison
    faith = faithfulness(comparison)
    assert (faith.data_status, faith.status) == ("block", "block")
    assert faith.judge_validation["status"] == "fit" and "fit to gate" in faith.judge_validation["reason"]
    assert [rate["run"] for rate in comparison.judge_rates] == ["base", "worse"]
    assert comparison.judge_rates[0]["corrected"] == 0.8


@pytest.mark.parametrize(("policy", "status"), [("warn", "block"), ("off", "block"), ("review", "review")])
def test_the_policy_is_chosen_per_call_and_logged(synthetic, validated_as, policy, status):
    validated_as(NOT_FIT)
    comparison = compare_runs(
        base=synthetic["base"], candidate=synthetic["worse"], slice_by=None, judge_policy=policy
    ).comparison
    faith = faithfulness(comparison)
    assert faith.status == status and faith.data_status == "block" and comparison.judge_policy == policy
    assert faith.judge_validation["status"] == "not_fit"  # recorded whatever the policy
    assert ("warning: judge" in faith.message) == (policy == "warn")


def test_the_gate_command_exits_3_for_an_unfit_judge_and_4_by_the_data_with_the_policy_off(synthetic, validated_as):
    validated_as(NOT_FIT)
    code, out, _ = gate("--base", "base", "--candidate", "worse", "--metric", "faithfulness", "--slice-by", "none")
    assert code == 3 and "misses 36 % of unsupported claims" in out
    code, out, _ = gate(
        "--base",
        "base",
        "--candidate",
        "worse",
        "--metric",
        "faithfulness",
        "--slice-by",
        "none",
        "--judge-policy",
        "off",
        "--json",
    )
    data = json.loads(out)
    assert code == 4 and data["overall"] == "block" and data["judge_policy"] == "off"
    assert data["decisions"][0]["judge"]["status"] == "not_fit" and data["decisions"][0]["data_status"] == "block"


def test_the_api_takes_the_policy_and_refuses_an_unknown_one(owner_client, synthetic, validated_as):
    validated_as(NOT_FIT)
    body = {"base": "base", "candidate": "worse", "metrics": ["faithfulness"], "slice_by": "none"}
    refused = owner_client.post("/api/gate/", {**body, "judge_policy": "lenient"}, content_type="application/json")
    assert refused.status_code == 400 and "judge_policy" in refused.json()
    accepted = owner_client.post("/api/gate/", {**body, "judge_policy": "warn"}, content_type="application/json")
    assert accepted.status_code == 202
    job = owner_client.get(accepted.json()["url"]).json()
    comparison = Comparison.objects.get(pk=job["result"]["comparison_id"])
    assert comparison.overall == "block" and comparison.judge_policy == "warn"
    detail = owner_client.get(f"/api/comparisons/{comparison.pk}/").json()
    assert detail["decisions"][0]["judge"]["reason"].startswith("judge gpt-x")


def test_the_comparison_page_shows_the_judge_validation_beside_the_decision(owner_client, synthetic, validated_as):
    validated_as(NOT_FIT)
    comparison = compare_runs(base=synthetic["base"], candidate=synthetic["worse"], slice_by=None).comparison
    page = owner_client.get(reverse("evalcore:comparison", args=[comparison.pk])).content.decode()
    assert "OVERALL: REVIEW" in page
    assert "misses 36 % of unsupported claims" in page and "not fit to gate" in page
    assert "Judge policy: review" in page
    assert "the data alone" in page


def test_a_bad_judge_policy_setting_stops_start_up(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from labelstudio_lite.env import envchoice

    monkeypatch.setenv("GATE_JUDGE_POLICY", "lenient")
    with pytest.raises(ImproperlyConfigured, match="GATE_JUDGE_POLICY='lenient' must be one of review, warn, off"):
        envchoice("GATE_JUDGE_POLICY", "review", ("review", "warn", "off"))
