"""Labels where they matter: a campaign whose tuning items follow Neyman's allocation over slice x verdict (where
the judge is least reliable), with each item's inclusion probability recorded and the estimates weighted by it.

The simulation draws campaigns from one synthetic run (the sampling service itself, seeded) and checks that the
weighted estimates of people's pass rate are unbiased while the unweighted labels are not; the held-out split
stays the verdict floor's, drawn at random and apart from Neyman's.
"""

from __future__ import annotations

from collections import Counter
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command

from evalcore.engine.allocation import disagreement_spread, neyman_allocation
from evalcore.engine.ppi import prediction_powered_mean
from evalcore.engine.sampling import stratified_allocation
from labelstudio_lite.labelling.models import Item
from labelstudio_lite.labelling.services.campaigns import (
    CampaignError,
    Candidate,
    _stratified_sample,
    plan_campaign,
    stratum_label,
)
from tests import factories


def synthetic_run(size: int = 2000, seed: int = 0) -> tuple[list[Candidate], dict[int, int]]:
    """A run of two slices; the judge passes 82 %; people fail 8 % of its passes on "numeric", 25 % elsewhere,
    and pass 55 % of its fails."""
    rng = np.random.default_rng(seed)
    candidates, people = [], {}
    for row in range(size):
        qtype = "numeric" if rng.random() < 0.3 else "prose"
        judge = bool(rng.random() < 0.82)
        fail_given_pass = 0.08 if qtype == "numeric" else 0.25
        people[row] = int(rng.random() >= fail_given_pass) if judge else int(rng.random() < 0.55)
        candidates.append(Candidate(row, None, qtype, judge))
    return candidates, people


def estimates(chosen, candidates, people) -> dict[str, float]:
    rows = [(stratum_label(c.stratum), float(c.judge_supported)) for c in candidates]
    labelled = [(stratum_label(c.stratum), float(c.judge_supported), people[c.row_id], w) for c, _, w in chosen]
    ppi = prediction_powered_mean(
        labels=[y for *_, y, _ in labelled],
        judge_labelled=[f for _, f, _, _ in labelled],
        judge_rows=[f for _, f in rows],
        labelled_strata=[s for s, *_ in labelled],
        row_strata=[s for s, _ in rows],
        design="run",
    )
    weights = np.array([w for *_, w in labelled])
    ys = np.array([y for *_, y, _ in labelled], dtype=float)
    heldout = [(people[c.row_id], w) for c, split, w in chosen if split == Item.Split.HELDOUT]
    return {
        "ppi": ppi.estimate,
        "ppi_covers": ppi.low <= np.mean(list(people.values())) <= ppi.high,
        "weighted": float(np.sum(weights * ys) / np.sum(weights)),
        "unweighted": float(ys.mean()),
        "heldout_weighted": float(sum(y * w for y, w in heldout) / sum(w for _, w in heldout)),
        "width": ppi.high - ppi.low,
    }


def simulate(replications: int, allocation: str = "neyman") -> dict[str, tuple[float, float]]:
    candidates, people = synthetic_run()
    found: dict[str, list[float]] = {}
    for seed in range(replications):
        chosen, _ = _stratified_sample(candidates, size=300, seed=seed, heldout_fraction=0.3, allocation=allocation)
        for key, value in estimates(chosen, candidates, people).items():
            found.setdefault(key, []).append(float(value))
    truth = float(np.mean(list(people.values())))
    return {
        key: (float(np.mean(v)) - (0 if key in ("ppi_covers", "width") else truth), float(np.std(v) / np.sqrt(len(v))))
        for key, v in found.items()
    }


def test_neyman_samples_where_the_judge_is_least_reliable_and_records_each_strata_probability():
    candidates, _ = synthetic_run()
    chosen, strata = _stratified_sample(candidates, size=300, seed=1, heldout_fraction=0.3, allocation="neyman")
    by_name = {s["stratum"]: s for s in strata}
    sizes = Counter(c.stratum for c in candidates)
    held = stratified_allocation(dict(sizes), 90)
    for key, count in sizes.items():
        s = by_name[stratum_label(key)]
        assert s["heldout"] == held[key]  # the held-out split is the verdict floor's, as for every campaign
        assert s["inclusion_probability"] == pytest.approx(s["sampled"] / count) and s["allocation"] == "neyman"
    for c, _, weight in chosen:
        assert weight == pytest.approx(
            by_name[stratum_label(c.stratum)]["available"] / by_name[stratum_label(c.stratum)]["sampled"]
        )
    left = {key: count - held[key] for key, count in sizes.items()}
    spread = {key: disagreement_spread(0.15 if key[1] else 0.5) for key in sizes}  # the default guesses
    expected = neyman_allocation(left, 210, spread=spread)
    assert {key: by_name[stratum_label(key)]["tuning"] for key in sizes} == expected  # n_h in proportion to N_h S_h
    assert len(chosen) == 300 and sum(1 for _, split, _ in chosen if split == Item.Split.HELDOUT) == 90


def test_an_unknown_allocation_or_a_disagreement_that_is_no_share_is_refused():
    candidates, _ = synthetic_run(50)
    with pytest.raises(CampaignError, match="allocation must be one of floor, neyman"):
        _stratified_sample(candidates, size=20, seed=1, heldout_fraction=0.3, allocation="optimal")
    with pytest.raises(CampaignError, match="the judge failed is a share from 0 to 1, got 1.5"):
        _stratified_sample(
            candidates, size=20, seed=1, heldout_fraction=0.3, allocation="neyman", disagreement={False: 1.5}
        )


def test_weighted_estimates_stay_unbiased_under_neyman_sampling_and_the_unweighted_labels_do_not_fast():
    found = simulate(200)
    for key in ("ppi", "weighted", "heldout_weighted"):
        bias, se = found[key]
        assert abs(bias) < 4 * se + 1e-3, (key, bias, se)
    bias, se = found["unweighted"]
    assert bias < -0.005 and abs(bias) > 5 * se  # the judge's fails are over-sampled: people's pass rate looks lower
    assert found["ppi_covers"][0] >= 0.9


@pytest.mark.slow
def test_weighted_estimates_stay_unbiased_under_neyman_sampling_slow():
    found = simulate(2000)
    for key in ("ppi", "weighted", "heldout_weighted"):
        bias, se = found[key]
        assert abs(bias) < 3 * se + 5e-4, (key, bias, se)
    assert found["ppi_covers"][0] >= 0.94
    floor = simulate(2000, allocation="floor")
    assert found["width"][0] < floor["width"][0]  # Neyman narrows the corrected pass rate's interval


@pytest.mark.django_db
def test_a_neyman_campaign_records_its_allocation_and_each_items_inclusion_probability(tmp_path, owner):
    run = factories.make_marked_run(folder=tmp_path / "n", n=60)
    out = StringIO()
    call_command(
        "create_campaign",
        *("--run", run.name, "--name", "ney", "--unit", "answer", "--size", "30", "--allocation", "neyman"),
        *("--fail-disagreement", "0.6"),
        stdout=out,
    )
    campaign = run.campaigns.get(name="ney")
    assert campaign.allocation == "neyman"
    by_name = {s["stratum"]: s for s in campaign.strata}
    for item in campaign.items.all():
        stratum = by_name[item.stratum]
        assert item.inclusion_probability == pytest.approx(stratum["sampled"] / stratum["available"])
        assert item.sampling_weight == pytest.approx(1 / item.inclusion_probability)
    floor = factories.make_campaign(run=run, name="floor", size=30, user=owner)
    assert floor.allocation == "floor" and all(i.inclusion_probability is not None for i in floor.items.all())


@pytest.mark.django_db
def test_the_api_and_the_campaign_form_create_neyman_campaigns_and_refuse_by_field(tmp_path, owner_client):
    """Every door takes the allocation (the API and the form as the command does) and names the field it refuses."""
    run = factories.make_marked_run(folder=tmp_path / "n", n=60)
    body = {"run": run.name, "name": "api-ney", "unit": "answer", "size": 30, "allocation": "neyman"}
    made = owner_client.post("/api/campaigns/", {**body, "fail_disagreement": 0.6}, content_type="application/json")
    assert made.status_code == 201, made.content
    assert made.json()["allocation"] == "neyman"
    campaign = run.campaigns.get(name="api-ney")
    assert campaign.allocation == "neyman"
    probabilities = {round(i.inclusion_probability, 9) for i in campaign.items.all()}
    assert len(probabilities) > 1  # Neyman's strata are sampled at different rates, each recorded
    assert campaign.strata == _stratified_sample_strata(run, allocation="neyman", disagreement={False: 0.6})

    for field, value in (("allocation", "optimal"), ("pass_disagreement", 1.5), ("fail_disagreement", -0.1)):
        refused = owner_client.post(
            "/api/campaigns/", {**body, "name": f"bad-{field}", field: value}, content_type="application/json"
        )
        assert refused.status_code == 400 and list(refused.json()) == [field], refused.content
    assert not run.campaigns.filter(name__startswith="bad-").exists()

    form = {"name": "form-ney", "run": run.pk, "unit": "answer", "size": 30, "heldout_fraction": 0.3}
    form |= {"overlap": 1, "seed": 7, "metric": "faithfulness", "scale": "binary", "allocation": "neyman"}
    page = owner_client.post("/campaigns/", form)
    assert page.status_code == 302, page.content.decode()[:2000]
    assert run.campaigns.get(name="form-ney").allocation == "neyman"
    overview = owner_client.get("/campaigns/form-ney/").content.decode()
    assert "Neyman&#x27;s allocation" in overview or "Neyman's allocation" in overview
    for stratum in run.campaigns.get(name="form-ney").strata:
        assert f"{stratum['inclusion_probability']:.3f}</td>" in overview
    page = owner_client.post("/campaigns/", {**form, "name": "form-bad", "pass_disagreement": "2"})
    assert page.status_code == 400 and not run.campaigns.filter(name="form-bad").exists()
    assert "Ensure this value is less than or equal to 1.0" in page.content.decode()


@pytest.mark.django_db
def test_the_preview_shows_the_neyman_tuning_split_before_anything_is_created(tmp_path, owner_client):
    run = factories.make_marked_run(folder=tmp_path / "n", n=60)
    form = {"run": run.pk, "unit": "answer", "size": 30, "heldout_fraction": 0.3, "overlap": 1, "seed": 7}
    tuning = {}
    for allocation in ("floor", "neyman"):
        html = owner_client.post("/campaigns/preview/", {**form, "allocation": allocation}).content.decode()
        expected = _stratified_sample_strata(run, allocation=allocation)
        for stratum in expected:
            assert f"<td>{stratum['stratum']}</td>" in html
        tuning[allocation] = [(s["stratum"], s["tuning"], s["heldout"]) for s in expected]
        row_cells = [f'<td class="num">{t}</td><td class="num">{h}</td>' for _, t, h in tuning[allocation]]
        assert all(cells in html for cells in row_cells), (allocation, html)
    assert tuning["floor"] != tuning["neyman"]
    assert not run.campaigns.exists()


def _stratified_sample_strata(run, *, allocation: str, disagreement: dict | None = None) -> list[dict]:
    """The strata the sampling service gives for the doors' settings (size 30, held-out 0.3, seed 7)."""
    plan = plan_campaign(
        run=run, unit="answer", size=30, seed=7, heldout_fraction=0.3, allocation=allocation, disagreement=disagreement
    )
    return plan.strata
