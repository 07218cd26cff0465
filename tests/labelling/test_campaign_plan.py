"""A campaign is planned before it is created: the form's live preview, ``create_campaign --plan`` and the API
say what the campaign's judge report will show (the half-widths of the miss rate, kappa and the corrected pass
rate) and how many items a target needs, from the run's own strata, with every assumption shown."""

from __future__ import annotations

import html
import io
import json
from collections import Counter

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from evalcore.services.judge_fitness import FIT, JudgeValidation
from evalcore.services.planning import plan_labels
from labelstudio_lite.labelling.models import Campaign
from labelstudio_lite.labelling.services import campaigns as campaign_service
from labelstudio_lite.labelling.services.campaigns import plan_campaign, population
from tests.factories import make_marked_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(db, tmp_path):
    """60 answers of two types, two claims each; the judge fails the first claim of every fourth answer (all policy)."""
    return make_marked_run(
        folder=tmp_path / "plan",
        n=60,
        verdicts=lambda i, claims: [not (i % 4 == 0 and c == 0) for c in range(claims)],
    )


def expected(run, unit="claim", **options):
    strata = Counter(c.stratum for c in population(run, unit))
    return plan_labels(strata=strata, **options)


def test_the_plan_is_the_planners_answer_for_the_runs_own_strata(run):
    plan = plan_campaign(run=run, unit="claim", size=60, heldout_fraction=0.3, overlap=2)
    want = expected(run, size=60, heldout_fraction=0.3, overlap=2)
    assert plan.precision.summary == want.summary
    assert plan.precision.plan.population == 120 and plan.precision.plan.labels == 120
    assert plan.precision.plan.judge_fail_items == sum(s["sampled"] for s in plan.strata if not s["judge_supported"])
    assert plan.assumed_from == "a default: this judge was never validated"
    assert "from the run: the judge fails 12 % of its items" in plan.precision.assumptions


def test_the_plan_assumes_the_miss_rate_of_the_judges_last_validation(run, monkeypatch):
    validation = JudgeValidation(status=FIT, judge="j", miss_rate=0.4, campaign="faith-q3")
    monkeypatch.setattr(campaign_service, "judge_validation", lambda config: validation)
    plan = plan_campaign(run=run, unit="claim", size=60)
    assert plan.precision.plan.assumptions.miss_rate == 0.4
    assert plan.assumed_from == "the last validation of this judge (campaign faith-q3)"
    perfect = JudgeValidation(status=FIT, judge="j", miss_rate=0.0, miss_high=0.19, campaign="faith-q4")
    monkeypatch.setattr(campaign_service, "judge_validation", lambda config: perfect)
    plan = plan_campaign(run=run, unit="claim", size=60)
    assert plan.precision.plan.assumptions.miss_rate == 0.19
    assert plan.assumed_from == "the upper end of the last validation's interval (campaign faith-q4 measured 0 %)"
    typed = plan_campaign(run=run, unit="claim", size=60, miss_rate=0.1)
    assert typed.precision.plan.assumptions.miss_rate == 0.1 and typed.assumed_from == "typed in"


def test_assumptions_the_run_contradicts_leave_the_sample_and_say_why_there_is_no_plan(run):
    plan = plan_campaign(run=run, unit="claim", size=60, false_fail_rate=0.5)
    assert plan.precision is None and "lower the assumed false-fail rate" in plan.precision_error
    assert plan.total_sampled == 60


def test_the_campaign_forms_preview_shows_what_the_campaign_will_measure(run, owner_client):
    data = {"run": run.pk, "unit": "claim", "size": "60", "heldout_fraction": "0.3", "overlap": "1", "seed": "7"}
    fragment = owner_client.post(reverse("labelling:preview"), {**data, "target": "0.1"}).content.decode()
    want = expected(run, size=60, target=0.1)
    assert "What this measures" in fragment
    assert html.escape(want.summary) in fragment and html.escape(want.assumptions) in fragment
    assert "60 items: miss rate ±" in want.summary and "on the miss rate" in want.summary


def test_create_campaign_plan_prints_the_plan_and_creates_nothing(run):
    out = io.StringIO()
    call_command("create_campaign", "--run", run.name, "--unit", "claim", "--size", "60", "--plan", stdout=out)
    text = out.getvalue()
    assert not Campaign.objects.exists()
    assert text.startswith("Plan (nothing created): 60 of 120 items of base")
    assert f"{expected(run, size=60).summary}." in text and "stratum" in text and "assuming people would fail" in text
    out = io.StringIO()
    call_command(
        "create_campaign", "--run", run.name, "--unit", "claim", "--size", "60", "--plan", "--json", stdout=out
    )
    data = json.loads(out.getvalue())
    assert data["precision"]["summary"] == expected(run, size=60).summary and data["sampled"] == 60
    assert not Campaign.objects.exists()


def test_create_campaign_still_needs_a_name_to_create(run):
    with pytest.raises(CommandError, match="--name is required"):
        call_command("create_campaign", "--run", run.name, "--unit", "claim", "--size", "60", stdout=io.StringIO())


def test_the_api_plans_a_campaign(run, owner_client):
    query = {"run": run.name, "unit": "claim", "size": 60, "overlap": 3, "target": 0.08, "miss_rate": 0.3}
    response = owner_client.get(reverse("api-campaign-plan"), query)
    data = response.json()
    want = expected(run, size=60, overlap=3, target=0.08, miss_rate=0.3)
    assert response.status_code == 200
    assert data["run"] == "base" and data["sampled"] == 60 and len(data["strata"]) == 3
    assert data["precision"]["report"]["kappa"] == pytest.approx(want.plan.report.kappa)
    assert data["precision"]["needed"]["items"] == want.needed.items and data["precision"]["labels"] == 180
    assert data["assumed_from"] == "typed in"
    assert not Campaign.objects.exists()


def test_the_api_says_what_is_wrong_with_a_plan_request(run, owner_client):
    missing = owner_client.get(reverse("api-campaign-plan"), {"run": run.name, "unit": "claim"})
    assert missing.status_code == 400 and "size" in missing.json()
    unknown = owner_client.get(reverse("api-campaign-plan"), {"run": "nope", "unit": "claim", "size": 5})
    assert unknown.status_code == 400 and "nope" in unknown.json()["detail"]


def test_the_api_plan_is_for_eval_owners(run, annotator_client):
    response = annotator_client.get(reverse("api-campaign-plan"), {"run": run.name, "unit": "claim", "size": 5})
    assert response.status_code == 403
