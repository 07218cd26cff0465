"""The held-out split: exports never touch it, a label export that does is flagged as leakage,
re-measurement runs on it only (paired on the same items), and once a re-measurement was looked at
and the judge tuned again, the split is spent and a fresh held-out sample is offered."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from django.urls import reverse

from labelstudio_lite.labelling.models import Campaign, CampaignAnnotator, ExportRecord, Item, RemeasurementView
from labelstudio_lite.labelling.services.campaigns import CampaignError, campaign_fresh_heldout
from labelstudio_lite.labelling.services.exports import disagreements_export
from labelstudio_lite.labelling.services.judge_report import judge_report
from labelstudio_lite.labelling.services.remeasure import RemeasureRefused, remeasure, remeasurement_open
from labelstudio_lite.labelling.services.verdicts import verdicts_import
from tests.factories import (
    TUNED_JUDGE,
    answer_claims,
    import_labels,
    import_verdicts,
    make_campaign,
    make_judged_run,
    word,
)
from tests.files import write_jsonl

from .conftest import Shared, spec_campaign_once

HELDOUT = 0.3


def tuned_verdict(case, qid: str) -> bool:
    """The tuned judge: people's label on four items of five, the old judge's verdict on the fifth."""
    return bool(case.human[qid]) if int(qid[1:]) % 5 else bool(case.judge[qid])


@pytest.fixture(scope="module")
def shared(django_db_setup, django_db_blocker, tmp_path_factory):
    """The spec run, a labelled campaign with 30 % held out, and a tuned judge's verdicts on every item."""
    folder = tmp_path_factory.mktemp("heldout")
    with spec_campaign_once(django_db_blocker, folder, name="spec-ho", heldout_fraction=HELDOUT) as (case, campaign):
        result = import_verdicts(
            folder=folder,
            campaign=campaign,
            file="tuned.verdicts.jsonl",
            judge_config=TUNED_JUDGE,
            records=[
                {"question_id": qid, "supported": tuned_verdict(case, qid), "rationale": f"tuned says so for {qid}"}
                for qid in sorted(case.human)
            ],
        )
        assert result.created
        yield Shared(case, campaign.pk, result.verdict_set.pk)


def split_of(campaign) -> dict[str, str]:
    return dict(Item.objects.filter(campaign=campaign).values_list("row__question__qid", "split"))


def kappa(pairs: list[tuple[int, int]]) -> float:
    n = len(pairs)
    observed = sum(h == j for h, j in pairs) / n
    ph, pj = sum(h for h, _ in pairs) / n, sum(j for _, j in pairs) / n
    expected = ph * pj + (1 - ph) * (1 - pj)
    return (observed - expected) / (1 - expected)


# ----------------------------------------------------------------------------------------------
# Exports come from the tuning split only
# ----------------------------------------------------------------------------------------------


def test_the_campaign_holds_out_30_percent_of_each_stratum(campaign):
    items = Item.objects.filter(campaign=campaign)
    heldout = items.filter(split="heldout").count()
    assert heldout == sum(s["heldout"] for s in campaign.strata)
    assert heldout == pytest.approx(0.3 * 200, abs=3)
    for s in campaign.strata:
        assert items.filter(stratum=s["stratum"], split="heldout").count() == s["heldout"] == round(s["sampled"] * 0.3)


def test_the_export_holds_exactly_the_disagreements_of_the_tuning_split_and_no_held_out_item(case, campaign):
    splits = split_of(campaign)
    expected = {q for q in case.human if case.kind(q) != "agree" and splits[q] == "tuning"}
    assert any(case.kind(q) != "agree" and splits[q] == "heldout" for q in case.human), (
        "the held-out split must hold disagreements"
    )

    for fmt in ("jsonl", "chat", "csv"):
        record = disagreements_export(campaign=campaign, fmt=fmt)
        exported = set(Item.objects.filter(pk__in=record.item_ids).values_list("row__question__qid", flat=True))
        assert exported == expected, fmt
        assert record.heldout_items == 0
        assert not Item.objects.filter(pk__in=record.item_ids, split="heldout").exists()


def test_a_balanced_export_of_the_tuning_split_has_as_many_false_passes_as_false_fails(case, campaign):
    splits = split_of(campaign)
    false_fails = {q for q in case.qids("false_fail") if splits[q] == "tuning"}

    record = disagreements_export(campaign=campaign, fmt="jsonl", balanced=True)

    examples = [json.loads(line) for line in record.content.splitlines()]
    assert sorted(e["error"] for e in examples) == ["false_fail"] * len(false_fails) + ["false_pass"] * len(false_fails)
    assert all(splits[e["question_id"]] == "tuning" for e in examples)


def test_disagreement_exports_never_count_as_leakage(campaign):
    disagreements_export(campaign=campaign, fmt="jsonl")
    disagreements_export(campaign=campaign, fmt="csv")

    report = judge_report(campaign).as_dict()
    assert report["leakage"] == {"leaked_exports": [], "leaked_items": 0}
    assert not any(w.startswith("Leakage") for w in report["warnings"])


# ----------------------------------------------------------------------------------------------
# Leakage: a label export that includes held-out items
# ----------------------------------------------------------------------------------------------


def test_a_label_export_records_which_items_it_used_including_the_held_out_ones(owner_client, owner, campaign):
    recorded = owner_client.post(reverse("labelling:export", args=[campaign.name, "csv"]))
    response = owner_client.get(recorded["Location"])
    assert response.status_code == 200
    body = response.content.decode()
    assert len(body.strip().splitlines()) == 201  # header and 200 labels

    record = ExportRecord.objects.get(campaign=campaign)
    assert record.kind == ExportRecord.Kind.LABELS and record.fmt == "csv" and record.version == 1
    assert record.created_by == owner
    assert sorted(record.item_ids) == sorted(Item.objects.filter(campaign=campaign).values_list("pk", flat=True))
    assert record.heldout_items == Item.objects.filter(campaign=campaign, split="heldout").count()


def test_after_a_label_export_the_report_warns_that_held_out_items_leaked(owner_client, campaign):
    heldout = Item.objects.filter(campaign=campaign, split="heldout").count()
    disagreements_export(campaign=campaign, fmt="jsonl")  # v1, clean
    owner_client.post(reverse("labelling:export", args=[campaign.name, "jsonl"]))  # v2, every label

    report = judge_report(campaign).as_dict()

    assert report["leakage"]["leaked_items"] == heldout
    assert [(e["version"], e["kind"], e["items"]) for e in report["leakage"]["leaked_exports"]] == [
        (2, "labels", heldout)
    ]
    assert (
        f"Leakage: {heldout} held-out answers were exported (v2); a re-measurement on the held-out split is no longer clean."
        in report["warnings"]
    )


def test_the_report_page_shows_the_leakage_warning(owner_client, campaign):
    owner_client.post(reverse("labelling:export", args=[campaign.name, "csv"]))

    page = owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()

    assert "Leakage: " in page and "held-out answers were exported (v1)" in page


# ----------------------------------------------------------------------------------------------
# Re-measurement: the held-out split only, paired on the same items
# ----------------------------------------------------------------------------------------------


def test_re_measuring_on_the_tuning_split_is_refused_with_the_reason(campaign, verdict_set, owner):
    with pytest.raises(RemeasureRefused, match="tuning split is refused.*overstate the improvement.*held-out split"):
        remeasure(campaign=campaign, verdict_set=verdict_set, split="tuning")
    assert not RemeasurementView.objects.filter(campaign=campaign).exists()


def test_the_remeasure_page_refuses_the_tuning_split_with_a_400_and_the_reason(owner_client, campaign, verdict_set):
    url = reverse("labelling:remeasure", args=[campaign.name])

    response = owner_client.get(url, {"verdicts": verdict_set.pk, "split": "tuning"})

    assert response.status_code == 400
    assert "Re-measuring on the tuning split is refused" in response.content.decode()
    assert not RemeasurementView.objects.filter(campaign=campaign).exists()


def test_the_remeasure_api_refuses_the_tuning_split_with_a_400_and_the_reason(owner_client, campaign, verdict_set):
    response = owner_client.get(
        f"/api/campaigns/{campaign.name}/remeasure/", {"verdicts": verdict_set.pk, "split": "tuning"}
    )

    assert response.status_code == 400
    assert response.json()["detail"].startswith("Re-measuring on the tuning split is refused")


def test_the_remeasure_api_needs_the_verdicts_of_a_new_judge(owner_client, campaign):
    assert owner_client.get(f"/api/campaigns/{campaign.name}/remeasure/").status_code == 400
    assert owner_client.get(f"/api/campaigns/{campaign.name}/remeasure/", {"verdicts": 999999}).status_code == 404


def test_re_measurement_compares_old_and_new_judge_paired_on_the_same_held_out_items(case, campaign, verdict_set):
    splits = split_of(campaign)
    heldout = sorted(q for q in case.human if splits[q] == "heldout")
    old_pairs = [(case.human[q], case.judge[q]) for q in heldout]
    new_pairs = [(case.human[q], int(tuned_verdict(case, q))) for q in heldout]

    result = remeasure(campaign=campaign, verdict_set=verdict_set).as_dict()

    assert result["split"] == "heldout" and result["n"] == len(heldout) == result["old"]["n"] == result["new"]["n"]
    assert result["heldout_items_without_new_verdicts"] == 0
    for side, pairs in (("old", old_pairs), ("new", new_pairs)):
        stats = result[side]
        assert stats["agreement"] == pytest.approx(sum(h == j for h, j in pairs) / len(pairs))
        assert stats["kappa"] == pytest.approx(kappa(pairs))
        assert stats["failures"] == sum(1 for h, _ in pairs if h == 0)
        assert stats["missed"] == sum(1 for h, j in pairs if h == 0 and j == 1)
        assert stats["miss_rate"] == pytest.approx(stats["missed"] / stats["failures"])
        assert stats["miss_low"] <= stats["miss_rate"] <= stats["miss_high"]
    assert result["new"]["kappa"] > result["old"]["kappa"]
    assert result["new"]["miss_rate"] < result["old"]["miss_rate"]
    assert str(verdict_set.judge_config) == result["new_judge"] != result["old_judge"]


def test_the_change_in_agreement_has_a_paired_bootstrap_interval(case, campaign, verdict_set):
    splits = split_of(campaign)
    heldout = sorted(q for q in case.human if splits[q] == "heldout")
    diffs = np.array(
        [float(case.human[q] == int(tuned_verdict(case, q))) - float(case.human[q] == case.judge[q]) for q in heldout]
    )

    change = remeasure(campaign=campaign, verdict_set=verdict_set).as_dict()["change_in_agreement"]

    assert change["n"] == len(heldout)
    assert change["mean"] == pytest.approx(diffs.mean())
    assert change["low"] <= change["mean"] <= change["high"]
    rng = np.random.default_rng(0)
    means = np.sort(diffs[rng.integers(0, len(diffs), size=(10_000, len(diffs)))].mean(axis=1))
    assert change["low"] == pytest.approx(means[250], abs=0.015)
    assert change["high"] == pytest.approx(means[9750], abs=0.015)
    assert change["low"] > 0  # the tuned judge agrees with people more often, beyond noise


def test_only_held_out_items_the_new_judge_scored_are_paired(case, campaign, tmp_path):
    splits = split_of(campaign)
    heldout = sorted(q for q in case.human if splits[q] == "heldout")
    path = write_jsonl(tmp_path / "partial.jsonl", [{"question_id": q, "supported": True} for q in heldout[5:]])
    result = verdicts_import(campaign=campaign, path=path, judge_config={**TUNED_JUDGE, "temperature": 0.5})
    partial, message = result.verdict_set, result.message
    assert f"({len(heldout) - 5} of {len(heldout)} held-out items covered)" in message

    result = remeasure(campaign=campaign, verdict_set=partial).as_dict()

    assert result["n"] == len(heldout) - 5
    assert result["heldout_items_without_new_verdicts"] == 5
    # the paired items cover the strata unevenly now: each stands for its stratum's run items
    strata = dict(Item.objects.filter(campaign=campaign).values_list("row__question__qid", "stratum"))
    available = {s["stratum"]: s["available"] for s in campaign.strata}
    paired = Counter(strata[q] for q in heldout[5:])
    weight = {name: available[name] / count for name, count in paired.items()}
    agree = sum(weight[strata[q]] * (case.human[q] == case.judge[q]) for q in heldout[5:])
    assert result["old"]["weighted"] is True
    assert result["old"]["agreement"] == pytest.approx(agree / sum(available[name] for name in paired))
    assert result["old"]["n"] == len(heldout) - 5 and result["old"]["failures"] == sum(
        1 for q in heldout[5:] if case.human[q] == 0
    )


def test_verdicts_of_another_campaign_are_refused(case, campaign, verdict_set, tmp_path):
    other = make_campaign(run=case.run, name="other", size=200, heldout_fraction=0.5)

    with pytest.raises(RemeasureRefused, match="another campaign"):
        remeasure(campaign=other, verdict_set=verdict_set)


def test_the_remeasure_page_asks_before_it_opens_and_records_that_the_owner_looked(
    owner_client, owner, campaign, verdict_set
):
    url = reverse("labelling:remeasure", args=[campaign.name]) + f"?verdicts={verdict_set.pk}"
    asked = owner_client.get(url).content.decode()
    assert (
        "Open the re-measurement?" in asked
        and "spends the held-out split" in asked
        and "Change in agreement" not in asked
    )
    assert not RemeasurementView.objects.exists()  # reading changes nothing

    response = owner_client.post(url, follow=True)

    assert response.status_code == 200 and response.redirect_chain[0][0] == url
    page = response.content.decode()
    assert "Old: " in page and f"New: {verdict_set.judge_config}" in page
    assert "Change in agreement (new − old)" in page and "paired bootstrap 95 % interval" in page
    view = RemeasurementView.objects.get(campaign=campaign)
    assert view.verdict_set == verdict_set and view.viewed_by == owner


def test_the_remeasure_api_opens_with_a_post_and_then_reads_the_same_numbers(owner_client, campaign, verdict_set):
    url = f"/api/campaigns/{campaign.name}/remeasure/?verdicts={verdict_set.pk}"
    unopened = owner_client.get(url)
    assert unopened.status_code == 409 and "POST to open it" in unopened.json()["detail"]
    assert not RemeasurementView.objects.exists()

    opened = owner_client.post(url)
    response = owner_client.get(url)

    assert opened.status_code == response.status_code == 200 and opened.json() == response.json()
    body = response.json()
    expected = remeasure(campaign=campaign, verdict_set=verdict_set).as_dict()
    assert body["n"] == expected["n"]
    assert body["change_in_agreement"] == pytest.approx(expected["change_in_agreement"])
    assert body["old"]["kappa"] == pytest.approx(expected["old"]["kappa"]) and body["new"]["kappa"] == pytest.approx(
        expected["new"]["kappa"]
    )
    assert RemeasurementView.objects.filter(campaign=campaign).count() == 1  # the POST; neither read recorded one


def test_the_report_of_the_new_judges_verdicts_uses_them_on_every_item(case, campaign, verdict_set):
    report = judge_report(campaign, verdict_set=verdict_set).as_dict()

    pairs = [(case.human[q], int(tuned_verdict(case, q))) for q in case.human]
    assert report["judge"]["source"] == "imported verdicts"
    assert report["judge"]["config_hash"] == verdict_set.judge_config.config_hash
    assert report["overall"]["agreement"] == pytest.approx(sum(h == j for h, j in pairs) / 200)
    assert report["corrected"] is None


# ----------------------------------------------------------------------------------------------
# A spent held-out split, and a fresh one
# ----------------------------------------------------------------------------------------------


def test_after_a_viewed_re_measurement_and_a_new_export_the_held_out_split_is_spent(
    owner_client, campaign, verdict_set
):
    assert judge_report(campaign).as_dict()["heldout_spent"] is None
    url = reverse("labelling:remeasure", args=[campaign.name]) + f"?verdicts={verdict_set.pk}"
    owner_client.get(url)
    assert not RemeasurementView.objects.exists(), "reading the page opens nothing"
    owner_client.post(url)
    assert judge_report(campaign).as_dict()["heldout_spent"] is None, "looking alone does not spend the split"

    record = disagreements_export(campaign=campaign, fmt="chat", verdict_set=verdict_set)

    report = judge_report(campaign).as_dict()
    spent = report["heldout_spent"]
    assert spent["export_version"] == record.version
    assert spent["message"].startswith("The held-out split is spent: a re-measurement on it was looked at on ")
    assert f"tuned again after that (export v{record.version})" in spent["message"]
    assert spent["message"].endswith("sample a fresh held-out set.")
    assert spent["message"] in report["warnings"]


def test_an_export_made_before_the_re_measurement_was_viewed_does_not_spend_the_split(owner, campaign, verdict_set):
    disagreements_export(campaign=campaign, fmt="jsonl")
    remeasurement_open(campaign=campaign, verdict_set=verdict_set, user=owner)

    assert judge_report(campaign).as_dict()["heldout_spent"] is None


def test_a_label_export_after_the_re_measurement_does_not_spend_the_split(owner_client, owner, campaign, verdict_set):
    remeasurement_open(campaign=campaign, verdict_set=verdict_set, user=owner)
    owner_client.post(reverse("labelling:export", args=[campaign.name, "csv"]))

    assert judge_report(campaign).as_dict()["heldout_spent"] is None


def test_the_report_page_offers_a_fresh_held_out_sample_once_the_split_is_spent(
    owner_client, owner, campaign, verdict_set
):
    page = owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()
    assert "Sample a fresh held-out set" not in page

    remeasurement_open(campaign=campaign, verdict_set=verdict_set, user=owner)
    owner_client.post(reverse("labelling:export-create", args=[campaign.name]), {"format": "jsonl", "seed": 7})

    page = owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()
    assert "The held-out split is spent" in page
    assert "Sample a fresh held-out set" in page
    assert reverse("labelling:fresh-heldout", args=[campaign.name]) in page


@pytest.fixture
def partial_campaign(db, tmp_path, owner, annotator):
    """A run of 90 answers and a campaign of 40 of them (30 % held out), with an annotator."""
    built = make_judged_run(
        folder=tmp_path / "fresh",
        claim_verdicts=[answer_claims(i % 4 != 0) for i in range(90)],
        evalset="fresh",
        name="fresh-run",
    )
    return make_campaign(
        run=built.run, name="partial", size=40, heldout_fraction=0.3, user=owner, annotators=[annotator], overlap=2
    )


def test_a_fresh_held_out_campaign_has_no_item_already_sampled_and_holds_every_item_out(
    partial_campaign, owner, annotator
):
    first = set(Item.objects.filter(campaign=partial_campaign).values_list("row_id", flat=True))

    fresh = campaign_fresh_heldout(campaign=partial_campaign, name="partial-fresh", size=30, user=owner)

    items = Item.objects.filter(campaign=fresh)
    assert items.count() == 30
    assert set(items.values_list("split", flat=True)) == {"heldout"}
    assert not first & set(items.values_list("row_id", flat=True))
    assert fresh.parent == partial_campaign and fresh.heldout_fraction == 1.0
    assert (fresh.unit, fresh.overlap, fresh.judge_question) == (
        partial_campaign.unit,
        2,
        partial_campaign.judge_question,
    )
    assert list(CampaignAnnotator.objects.filter(campaign=fresh).values_list("user", flat=True)) == [annotator.pk]
    assert sum(s["sampled"] for s in fresh.strata) == 30 and all(s["tuning"] == 0 for s in fresh.strata)


def test_a_second_fresh_sample_avoids_both_earlier_campaigns_and_says_when_nothing_is_left(partial_campaign):
    fresh = campaign_fresh_heldout(campaign=partial_campaign, name="fresh-1", size=30)
    second = campaign_fresh_heldout(campaign=fresh, name="fresh-2", size=100)

    rows = [
        set(Item.objects.filter(campaign=c).values_list("row_id", flat=True)) for c in (partial_campaign, fresh, second)
    ]
    assert len(rows[2]) == 20  # 90 - 40 - 30 left
    assert not rows[2] & (rows[0] | rows[1])
    with pytest.raises(CampaignError, match="nothing fresh to hold out"):
        campaign_fresh_heldout(campaign=second, name="fresh-3", size=10)
    with pytest.raises(CampaignError, match="already exists"):
        campaign_fresh_heldout(campaign=partial_campaign, name="fresh-1", size=10)


def test_the_fresh_held_out_page_creates_the_campaign_and_opens_it(owner_client, partial_campaign):
    response = owner_client.post(
        reverse("labelling:fresh-heldout", args=[partial_campaign.name]), {"name": "partial-next", "size": 25}
    )

    assert response.status_code == 302
    assert response["Location"] == reverse("labelling:campaign", args=["partial-next"])
    fresh = Campaign.objects.get(name="partial-next")
    assert fresh.parent == partial_campaign and fresh.items.count() == 25
    assert set(fresh.items.values_list("split", flat=True)) == {"heldout"}


def test_the_corrected_rate_of_a_fresh_held_out_campaign_is_about_the_whole_run(partial_campaign, tmp_path):
    fresh = campaign_fresh_heldout(campaign=partial_campaign, name="partial-fresh", size=30)
    qids = Item.objects.filter(campaign=fresh).values_list("row__question__qid", flat=True)
    people = [(q, word(int(q[1:]) % 4 != 0 and int(q[1:]) % 9 != 0)) for q in qids]
    import_labels(
        folder=tmp_path, campaign=fresh, rows=[(q, None, v, rater, "") for q, v in people for rater in ("r1", "r2")]
    )  # overlap 2

    report = judge_report(fresh).as_dict()
    corrected = report["corrected"]

    assert report["overall"]["n"] == 30
    # the run: 90 answers, the judge passing the 67 with i % 4 != 0; not just the 50 no earlier campaign took
    assert corrected["run_items"] == 90
    assert corrected["raw"] == pytest.approx(67 / 90)
