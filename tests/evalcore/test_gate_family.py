"""The gate's family of decisions at every door: the correction is recorded with the comparison, each
decision carries its raw and adjusted p-value and how its interval and test were made, and the page,
the command, its JSON, the API and the form all say so and can turn the correction off."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from evalcore.models import Comparison, Job
from evalcore.services.comparisons import ComparisonRefused, compare_runs
from tests.evalcore.test_compare_gate import decision, demo  # noqa: F401 (the demo fixture)

from .conftest import gate

pytestmark = pytest.mark.django_db

PASS_FAIL = {"abstention"}  # the demo's metric scored 0 or 1 in both runs


@pytest.fixture(autouse=True)
def _the_data_alone_decides(settings):
    settings.GATE_JUDGE_POLICY = "off"


def test_a_comparison_records_its_family_and_every_decision_its_tests(demo):  # noqa: F811
    comparison = compare_runs(base=demo["base"], candidate=demo["cand"]).comparison
    records = list(comparison.decisions.all())
    tested = [d for d in records if d.p_value is not None]
    assert comparison.correction == "holm"
    assert comparison.family_size == len(tested) == 33  # 7 metrics x 5 slices, two slices too small for abstention
    for record in tested:
        assert 0 <= record.p_value <= record.p_adjusted <= 1
        assert record.interval_method == ("tango" if record.metric in PASS_FAIL else "expanded")
        assert record.test_method in ("exact", "monte-carlo", "normal")
    untested = [d for d in records if d.p_value is None]
    assert {(d.metric, d.n < 10) for d in untested} == {("abstention", True)}


def test_a_drop_on_one_slice_that_does_not_survive_the_correction_is_sent_to_review_in_words(demo):  # noqa: F811
    corrected = compare_runs(base=demo["base"], candidate=demo["cand"]).comparison
    account = decision(corrected, "faithfulness", "account")
    assert account.status == "review" and account.high < 0  # the interval alone would have blocked it
    assert account.corrected_away
    assert "drop on slice account" in account.message
    assert "not significant after correcting for 33 decisions" in account.message
    assert decision(corrected, "faithfulness").status == "block"  # the overall drop survives it

    alone = compare_runs(base=demo["base"], candidate=demo["cand"], correction="none").comparison
    assert alone.correction == "none"
    account = decision(alone, "faithfulness", "account")
    assert account.status == "block" and account.p_adjusted == account.p_value


def test_an_unknown_correction_is_refused_with_the_choices():
    with pytest.raises(ComparisonRefused, match=r"the correction must be one of holm, none .*got 'bonferroni'"):
        compare_runs(base=None, candidate=None, correction="bonferroni")  # refused before anything is read


def test_the_command_prints_the_family_and_the_p_values_and_takes_the_correction(demo):  # noqa: F811
    code, out, _ = gate("--base", "chunks-512", "--candidate", "chunks-256-rerank")
    assert code == 4
    assert "a block is corrected for 33 decisions (Holm's step-down, family-wise α = 0.025)" in out
    assert "P ADJ" in out.splitlines()[3]
    code, out, _ = gate("--base", "chunks-512", "--candidate", "chunks-256-rerank", "--correction", "none", "--json")
    data = json.loads(out)
    assert code == 4 and data["correction"] == "none" and data["family_size"] == 33
    faith = next(d for d in data["decisions"] if (d["metric"], d["slice"]) == ("faithfulness", "account"))
    assert faith["status"] == "block" and faith["p_adjusted"] == faith["p_value"]
    assert {"p_value", "p_adjusted", "interval_method", "test_method"} <= set(faith)


def test_the_api_takes_the_correction_and_refuses_an_unknown_one(owner_client, demo):  # noqa: F811
    refused = owner_client.post(
        "/api/gate/",
        {"base": "chunks-512", "candidate": "chunks-256-rerank", "correction": "bonferroni"},
        content_type="application/json",
    )
    assert refused.status_code == 400 and "correction" in json.dumps(refused.json())
    assert Comparison.objects.count() == 0
    response = owner_client.post(
        "/api/gate/",
        {"base": "chunks-512", "candidate": "chunks-256-rerank", "correction": "none"},
        content_type="application/json",
    )
    assert response.status_code == 202, response.content
    job = owner_client.get(response["Location"]).json()
    data = owner_client.get(f"/api/comparisons/{job['result']['comparison_id']}/").json()
    assert data["correction"] == "none" and data["family_size"] == 33
    assert all("p_adjusted" in d for d in data["decisions"])


def test_the_form_takes_the_correction_and_the_page_shows_the_family(owner_client, demo):  # noqa: F811
    response = owner_client.post(
        reverse("evalcore:compare"),
        {
            "base": demo["base"].pk,
            "candidate": demo["cand"].pk,
            "slice_by": "type",
            "margin": 0.02,
            "judge_policy": "off",
            "correction": "none",
        },
    )
    assert response.status_code == 302
    comparison = Comparison.objects.get(pk=Job.objects.filter(kind="gate").get().result["comparison_id"])
    assert comparison.correction == "none"
    holm = compare_runs(base=demo["base"], candidate=demo["cand"]).comparison
    page = owner_client.get(reverse("evalcore:comparison", args=[holm.pk])).content.decode()
    assert "A block is corrected for 33 decisions (Holm&#x27;s step-down, family-wise α = 0.025)" in page
    assert "p adjusted" in page
    assert "a drop, but not significant after correcting for 33 decisions" in page
    page = owner_client.get(reverse("evalcore:comparison", args=[comparison.pk])).content.decode()
    assert "No family-wise correction: each of the 33 decisions blocks at α = 0.025 alone" in page


def test_a_bad_correction_setting_stops_start_up(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from labelstudio_lite.env import envchoice

    monkeypatch.setenv("GATE_CORRECTION", "bonferroni")
    with pytest.raises(ImproperlyConfigured, match="GATE_CORRECTION='bonferroni' must be one of holm, none"):
        envchoice("GATE_CORRECTION", "holm", ("holm", "none"))
