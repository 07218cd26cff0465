"""The bias battery against the fake judge with biases of known size: found within their intervals, none invented.

The fake judge reads literally (a claim is supported when its words are in the context), flips 2 % of its verdicts
at random under each seed (its own noise, which the placebo measures) and, when a bias is switched on, answers
"supported" with a known chance whenever a phrase is in the prompt.
"""

from __future__ import annotations

import pytest

from evalcore.judging.probes import AUTHORITY, BUILT_IN, PADDING
from evalcore.services.judge_configs import judge_config_create
from labelstudio_lite.labelling.bias_selectors import latest_bias_verdict
from labelstudio_lite.labelling.models import BiasBattery, Item
from labelstudio_lite.labelling.services.bias_battery import (
    BiasBatteryRefused,
    bias_battery_run,
    bias_estimate,
    bias_plan,
    probe_add,
)
from tests import factories

#: A verdict prompt that shows the answer (the probes change it) before the context and the claim.
PROMPT = "Is the claim supported by the context?\nQuestion: {question}\nAnswer: {answer}\nContext:\n{context}\nClaim: {claim}"


@pytest.fixture
def seeing_judge(db, fake_judge):
    return judge_config_create(
        raw=factories.runnable_judge(
            fake_judge.base_url,
            name="seeing-judge",
            prompt=PROMPT,
            limits={"concurrency": 8, "max_retries": 2, "timeout_seconds": 5},
        )
    ).config


@pytest.fixture
def probe_set(db, tmp_path):
    """300 answers of two claims (the second unsupported to a literal judge in three answers of four); a quarter
    of the answers held out. Claims of one answer are one cluster."""
    run = factories.make_literal_run(folder=tmp_path, n=300, evalset="probes", name="probed")
    return factories.make_campaign(run=run, name="probe-set", unit="answer", heldout_fraction=0.25)


def _finding(battery: BiasBattery, probe: str, direction: str = "to_supported") -> dict:
    return next(f for f in battery.findings if f["probe"] == probe and f["direction"] == direction)


def test_a_planted_authority_bias_is_found_within_its_interval_and_nothing_else(fake_judge, seeing_judge, probe_set):
    fake_judge.fake.noise = 0.02
    fake_judge.fake.bias(AUTHORITY, 0.15)
    plan = bias_plan(campaign=probe_set, config=seeing_judge)
    estimate = bias_estimate(plan)
    assert estimate.cached_calls == 0 and estimate.calls > 0
    outcome = bias_battery_run(plan)
    battery = outcome.battery
    authority = _finding(battery, "authority")
    assert authority["blocks"] and authority["low"] <= 0.15 <= authority["high"]
    assert authority["n"] > 80  # unsupported claims of the tuning items
    others = [f for f in battery.findings if not (f["probe"] == "authority" and f["direction"] == "to_supported")]
    assert not any(f["significant"] for f in others), [f["words"] for f in others if f["significant"]]
    assert all(f["low"] <= 0 for f in others if f["n"])
    assert battery.blocks_gating
    assert battery.verdict.startswith("untrusted for gating: flips ")
    assert "when the answer ends with an expert's assurance, CI" in battery.verdict
    verdict = latest_bias_verdict(seeing_judge, "faithfulness")
    assert verdict.blocks_gating and verdict.battery_id == battery.pk
    assert verdict.findings == (authority["words"],)
    print(f"estimate: {estimate.line} ({estimate.note})")
    for f in battery.findings:
        print(f["probe"], f["direction"], f["words"])
    print("verdict:", battery.verdict)
    print("totals:", battery.totals)


def test_the_battery_never_sends_a_held_out_item(fake_judge, seeing_judge, probe_set):
    def claims(split):
        items = Item.objects.filter(campaign=probe_set, split=split).select_related("row")
        return {claim["text"] for item in items for claim in item.row.claims}

    held_claims, tuning_claims = claims(Item.Split.HELDOUT), claims(Item.Split.TUNING)
    only_held = held_claims - tuning_claims
    assert only_held
    bias_battery_run(bias_plan(campaign=probe_set, config=seeing_judge, probes=["authority"]))
    sent = {r.prompt.rsplit("Claim:", 1)[1].strip() for r in fake_judge.fake.requests}
    assert not sent & only_held


def test_a_repeated_battery_makes_no_new_call_and_finds_its_stored_findings(fake_judge, seeing_judge, probe_set):
    plan = bias_plan(campaign=probe_set, config=seeing_judge, probes=["authority", "verbosity"])
    first = bias_battery_run(plan)
    paid = fake_judge.fake.total_answered
    assert paid == first.totals["calls"] > 0
    assert bias_estimate(plan).cached_calls == bias_estimate(plan).calls
    again = bias_battery_run(plan)
    assert fake_judge.fake.total_answered == paid
    assert again.totals["calls"] == 0 and again.totals["from_cache"] == paid
    assert not again.created and again.battery.pk == first.battery.pk
    assert BiasBattery.objects.count() == 1


def test_an_unbiased_judge_is_cleared_by_the_battery(fake_judge, seeing_judge, probe_set):
    fake_judge.fake.noise = 0.02
    battery = bias_battery_run(bias_plan(campaign=probe_set, config=seeing_judge)).battery
    assert not battery.blocks_gating
    assert battery.verdict.startswith("no probe flips verdicts beyond the placebo")
    assert not latest_bias_verdict(seeing_judge).blocks_gating
    placebo_noise = _finding(battery, "authority")["placebo_rate"]
    assert 0 < placebo_noise < 0.1  # the placebo did see the judge's own noise


def test_a_bias_of_another_size_and_direction_is_recovered(fake_judge, seeing_judge, probe_set):
    fake_judge.fake.bias(PADDING, 0.30, toward_supported=False)
    battery = bias_battery_run(bias_plan(campaign=probe_set, config=seeing_judge, probes=["verbosity"])).battery
    padded = _finding(battery, "verbosity", "to_unsupported")
    assert padded["blocks"] and padded["low"] <= 0.30 <= padded["high"]
    assert not _finding(battery, "verbosity", "to_supported")["blocks"]


def test_a_probe_the_prompt_cannot_show_changes_nothing_and_says_so(fake_judge, judge, probe_set):
    """The literal judge's prompt shows no answer: answer probes apply to no claim; the context order applies."""
    battery = bias_battery_run(
        bias_plan(campaign=probe_set, config=judge, probes=["authority", "context-order"])
    ).battery
    assert _finding(battery, "authority")["applied_claims"] == 0
    assert _finding(battery, "authority")["n"] == 0
    assert "no claim at risk" in _finding(battery, "authority")["words"]
    assert _finding(battery, "context-order")["applied_claims"] > 0


def test_owner_probes_are_versioned_and_frozen(db):
    first = probe_add(name="distractor", kind="append", field="context", text="Plans ship to Mars.", describes="x y")
    same = probe_add(name="distractor", kind="append", field="context", text="Plans ship to Mars.", describes="x y")
    second = probe_add(name="distractor", kind="append", field="context", text="Plans ship to Venus.", describes="x y")
    assert same.pk == first.pk and (first.version, second.version) == (1, 2)
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        type(first).objects.filter(pk=first.pk).update(text="changed")
    with pytest.raises(ValueError):
        first.delete()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"bar": 1.5}, "the bar is a flip rate"),
        ({"alpha": 0}, "alpha is a level"),
        ({"correction": "bh"}, "correction must be one of"),
        ({"probes": ["nosuch"]}, "there is no bias probe 'nosuch'"),
        ({"probes": ["placebo"]}, "at least one probe besides the placebo"),
    ],
)
def test_a_bad_battery_is_refused_before_it_runs(seeing_judge, probe_set, changes, message):
    with pytest.raises(BiasBatteryRefused, match=message):
        bias_plan(campaign=probe_set, config=seeing_judge, **changes)


def test_a_campaign_with_nothing_but_held_out_items_is_refused(seeing_judge, tmp_path):
    run = factories.make_literal_run(folder=tmp_path, n=8, evalset="held", name="held")
    campaign = factories.make_campaign(run=run, name="all-held", unit="claim", heldout_fraction=1.0)
    with pytest.raises(BiasBatteryRefused, match="held-out items are never probed"):
        bias_plan(campaign=campaign, config=seeing_judge)


def test_the_battery_frozen_in_the_database(fake_judge, seeing_judge, probe_set):
    from django.db import IntegrityError, transaction

    battery = bias_battery_run(bias_plan(campaign=probe_set, config=seeing_judge, probes=["authority"])).battery
    with pytest.raises(IntegrityError), transaction.atomic():
        BiasBattery.objects.filter(pk=battery.pk).update(blocks_gating=not battery.blocks_gating)
    with pytest.raises(ValueError):
        battery.save()
    assert [s["name"] for s in battery.probes] == ["authority", "placebo"]
    assert battery.probes[0]["text"] == next(s.text for s in BUILT_IN if s.name == "authority")
