"""Per-slice statistics (an aggregate can hold while one slice collapses) and claim-level campaigns,
which report per claim and rolled up to answers (an answer is unsupported if any of its labelled
claims is)."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from django.urls import reverse
from statsmodels.stats.proportion import proportion_confint

from evalcore.engine.judge import kappa_bootstrap
from labelstudio_lite.labelling.models import Campaign, Item
from labelstudio_lite.labelling.services.exports import disagreements_export
from labelstudio_lite.labelling.services.judge_report import judge_report
from tests.factories import (
    TUNED_JUDGE,
    TYPES,
    import_labels,
    import_verdicts,
    judge_why,
    make_campaign,
    make_judged_run,
    qid_of,
    word,
)

from .conftest import Shared, module_data, spec_campaign_once

ANSWERS, CLAIMS = 45, 3


def manual_stats(pairs: list[tuple[int, int]]) -> dict:
    """Agreement, kappa, confusion and the miss rate of (human, judge) pairs, 1 = supported, by hand."""
    n = len(pairs)
    ss = sum(1 for h, j in pairs if h == 1 and j == 1)
    su = sum(1 for h, j in pairs if h == 1 and j == 0)
    us = sum(1 for h, j in pairs if h == 0 and j == 1)
    uu = sum(1 for h, j in pairs if h == 0 and j == 0)
    observed = (ss + uu) / n
    expected = ((ss + su) * (ss + us) + (us + uu) * (su + uu)) / n**2
    return {
        "n": n,
        "agreement": observed,
        "kappa": (observed - expected) / (1 - expected),
        "confusion": {
            "people_supported": {"judge_supported": ss, "judge_unsupported": su},
            "people_unsupported": {"judge_supported": us, "judge_unsupported": uu},
        },
        "failures": us + uu,
        "missed": us,
        "caught": uu,
        "people_unsupported_rate": (us + uu) / n,
        "judge_unsupported_rate": (su + uu) / n,
        "table": [[ss, su], [us, uu]],
    }


def assert_stats_match(stats: dict, expected: dict, seed: int) -> None:
    for key in ("n", "confusion", "failures", "missed", "caught"):
        assert stats[key] == expected[key], key
    for key in ("agreement", "kappa", "people_unsupported_rate", "judge_unsupported_rate"):
        assert stats[key] == pytest.approx(expected[key]), key
    low, high = proportion_confint(expected["missed"], expected["failures"], method="wilson")
    assert (stats["miss_low"], stats["miss_high"]) == pytest.approx((low, high))
    assert stats["miss_rate"] == pytest.approx(expected["missed"] / expected["failures"])
    boot = kappa_bootstrap(expected["table"], seed=seed)
    assert (stats["kappa_low"], stats["kappa_high"]) == pytest.approx((boot.low, boot.high))


# ----------------------------------------------------------------------------------------------
# Per slice
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shared(django_db_setup, django_db_blocker, tmp_path_factory):
    with spec_campaign_once(django_db_blocker, tmp_path_factory.mktemp("slices"), name="spec-slices") as (
        case,
        campaign,
    ):
        yield Shared(case, campaign.pk)


def test_each_slice_matches_a_manual_computation_on_its_own_pairs(case, campaign):
    by_slice = defaultdict(list)
    for qid, h in case.human.items():
        by_slice[case.built.qtype[qid]].append((h, case.judge[qid]))

    slices = judge_report(campaign).as_dict()["slices"]

    assert [s["slice"] for s in slices] == sorted(TYPES)
    assert sum(s["n"] for s in slices) == 200
    for s in slices:
        expected = manual_stats(by_slice[s["slice"]])
        assert_stats_match(s, expected, campaign.seed)
        assert (
            s["miss_sentence"]
            == f"the judge passed {expected['missed']} of the {expected['failures']} answers people found unsupported"
        )


def test_the_overall_numbers_match_the_same_manual_computation(case, campaign):
    overall = judge_report(campaign).as_dict()["overall"]

    assert_stats_match(overall, manual_stats([(case.human[q], case.judge[q]) for q in case.human]), campaign.seed)


def test_a_slice_where_the_judge_collapses_shows_up_although_the_aggregate_holds(db, tmp_path):
    # 240 answers of two types: the judge is right on every "policy" answer, and passes every unsupported "billing" one
    verdicts = []
    human = []
    for i in range(240):
        qtype_billing = i % 2 == 1
        people = i % 8 not in (0, 1)  # a quarter unsupported in each type
        judge = True if qtype_billing else people
        verdicts.append([True] if judge else [True, False])
        human.append(people)
    built = make_judged_run(
        folder=tmp_path, claim_verdicts=verdicts, types=("policy", "billing"), evalset="collapse", name="collapse"
    )
    campaign = make_campaign(run=built.run, name="collapse", size=240)
    import_labels(
        folder=tmp_path, campaign=campaign, rows=[(qid_of(i), None, word(h), "r1", "") for i, h in enumerate(human)]
    )

    report = judge_report(campaign).as_dict()

    slices = {s["slice"]: s for s in report["slices"]}
    assert slices["policy"]["miss_rate"] == 0 and slices["policy"]["kappa"] == pytest.approx(1.0)
    assert slices["billing"]["miss_rate"] == 1 and slices["billing"]["missed"] == slices["billing"]["failures"] == 30
    assert slices["billing"]["kappa"] == pytest.approx(0.0)
    assert report["overall"]["agreement"] == pytest.approx(210 / 240)
    assert report["overall"]["kappa"] > 0.5  # the aggregate looks moderate while one slice has collapsed


# ----------------------------------------------------------------------------------------------
# Claim-level campaigns
# ----------------------------------------------------------------------------------------------


def judge_claim(i: int, c: int) -> bool:
    return (i + c) % 7 != 0


def human_claim(i: int, c: int) -> bool:
    flip = (3 * i + c) % 11 == 0
    return judge_claim(i, c) != flip


@pytest.fixture(scope="module")
def claims(django_db_setup, django_db_blocker, tmp_path_factory):
    """45 answers of three claims each, a claim campaign of all 135 claims, every claim labelled."""
    with module_data(django_db_blocker):
        folder = tmp_path_factory.mktemp("claims")
        built = make_judged_run(
            folder=folder,
            claim_verdicts=[[judge_claim(i, c) for c in range(CLAIMS)] for i in range(ANSWERS)],
            evalset="claims",
            name="claims-run",
        )
        campaign = make_campaign(run=built.run, name="claims", unit="claim", size=1000, seed=5)
        import_labels(
            folder=folder,
            campaign=campaign,
            rows=[
                (qid_of(i), c, word(human_claim(i, c)), "r1", f"HUMANWHY-{qid_of(i)}-{c}")
                for i in range(ANSWERS)
                for c in range(CLAIMS)
            ],
        )
        yield built, campaign.pk


@pytest.fixture
def claim_campaign(claims, db):
    return Campaign.objects.get(pk=claims[1])


def test_a_claim_campaign_reports_at_claim_level(claim_campaign):
    report = judge_report(claim_campaign).as_dict()

    assert report["unit"] == "claim" and report["unit_word"] == "claims"
    expected = manual_stats(
        [(int(human_claim(i, c)), int(judge_claim(i, c))) for i in range(ANSWERS) for c in range(CLAIMS)]
    )
    assert_stats_match(report["overall"], expected, claim_campaign.seed)
    assert report["overall"]["miss_sentence"] == (
        f"the judge passed {expected['missed']} of the {expected['failures']} claims people found unsupported"
    )


def test_a_claim_campaign_rolls_up_to_answers_unsupported_if_any_claim_is(claim_campaign):
    report = judge_report(claim_campaign).as_dict()

    expected = manual_stats(
        [
            (int(all(human_claim(i, c) for c in range(CLAIMS))), int(all(judge_claim(i, c) for c in range(CLAIMS))))
            for i in range(ANSWERS)
        ]
    )
    assert expected["failures"] > 0 and expected["missed"] > 0, "the fixture must give the roll-up misses to count"
    answers = report["answers"]
    assert_stats_match(answers, expected, claim_campaign.seed)
    assert (
        answers["miss_sentence"]
        == f"the judge passed {expected['missed']} of the {expected['failures']} answers people found unsupported"
    )


def test_the_roll_up_uses_only_the_labelled_claims_of_an_answer(claims, db, tmp_path):
    built, _ = claims
    campaign = make_campaign(run=built.run, name="claims-part", unit="claim", size=1000)
    labelled = [
        (i, c) for i in range(ANSWERS) for c in range(CLAIMS) if c < 2
    ]  # the third claim of every answer stays unlabelled
    import_labels(
        folder=tmp_path,
        campaign=campaign,
        rows=[(qid_of(i), c, word(human_claim(i, c)), "r1", "") for i, c in labelled],
    )

    report = judge_report(campaign).as_dict()

    expected = manual_stats(
        [
            (int(human_claim(i, 0) and human_claim(i, 1)), int(judge_claim(i, 0) and judge_claim(i, 1)))
            for i in range(ANSWERS)
        ]
    )
    assert report["answers"]["n"] == ANSWERS
    assert report["answers"]["confusion"] == expected["confusion"]
    assert report["overall"]["n"] == 2 * ANSWERS
    assert "Labels still in progress: 45 of 135 claims have no final label yet and are left out." in report["warnings"]


def test_an_answer_campaign_has_no_roll_up(campaign):
    assert "answers" not in judge_report(campaign).as_dict()


def test_the_report_page_of_a_claim_campaign_shows_the_roll_up(claim_campaign, owner_client):
    report = judge_report(claim_campaign).as_dict()

    page = owner_client.get(reverse("labelling:report", args=[claim_campaign.name])).content.decode()

    assert "Rolled up to answers (an answer is unsupported if any of its labelled claims is)" in page
    assert f"n {report['answers']['n']}" in page
    assert report["answers"]["miss_sentence"] in page


def test_a_claim_export_gives_the_claim_its_index_and_the_judges_rationale_for_it(claim_campaign):
    record = disagreements_export(campaign=claim_campaign, fmt="jsonl")
    examples = [json.loads(line) for line in record.content.splitlines()]

    disagreements = {
        (qid_of(i), c) for i in range(ANSWERS) for c in range(CLAIMS) if human_claim(i, c) != judge_claim(i, c)
    }
    assert {(e["question_id"], e["claim_index"]) for e in examples} == disagreements
    for e in examples:
        qid, c = e["question_id"], e["claim_index"]
        assert e["claim"] == f"Claim {c + 1} of {qid}: the window is {10 + c} days."
        assert e["human_rationales"] == [f"HUMANWHY-{qid}-{c}"]
        assert e["judge_rationale"] == (
            f"Stated in chunk 1 for {qid}." if judge_claim(int(qid[1:]), c) else judge_why(qid)
        )


def test_the_chat_form_of_a_claim_export_asks_about_the_claim(claim_campaign):
    record = disagreements_export(campaign=claim_campaign, fmt="chat", limit=3)

    for line in record.content.splitlines():
        user = json.loads(line)["messages"][1]["content"]
        assert "\n\nClaim: Claim " in user and "Is this claim supported by the context?" in user


def test_claim_verdicts_are_imported_by_question_and_claim_index(claim_campaign, tmp_path):
    result = import_verdicts(
        folder=tmp_path,
        campaign=claim_campaign,
        file="claims.verdicts.jsonl",
        judge_config=TUNED_JUDGE,
        records=[
            {"question_id": qid_of(i), "claim_index": c, "supported": human_claim(i, c)}
            for i in range(ANSWERS)
            for c in range(CLAIMS)
        ],
    )
    verdict_set, created = result.verdict_set, result.created

    assert created and verdict_set.verdicts.count() == ANSWERS * CLAIMS
    item = Item.objects.get(campaign=claim_campaign, row__question__qid=qid_of(4), claim_index=2)
    assert verdict_set.verdicts.get(item=item).supported is human_claim(4, 2)
    assert judge_report(claim_campaign, verdict_set=verdict_set).as_dict()["overall"]["agreement"] == 1.0
