"""The spec's judge example end to end: 200 answers, people 150 supported / 50 unsupported, the
judge agreeing on 170 of them, reproduced through the real imports, the campaign and the report,
then exported as few-shot examples."""

from __future__ import annotations

import csv
import html
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse
from statsmodels.stats.inter_rater import cohens_kappa
from statsmodels.stats.proportion import proportion_confint

from evalcore.services.planning import plan_labels, spread
from labelstudio_lite.labelling.models import ExportRecord, Item
from labelstudio_lite.labelling.services.exports import (
    DISAGREEMENT_FIELDS,
    ExportError,
    disagreement_examples,
    disagreements_export,
)
from labelstudio_lite.labelling.services.judge_report import judge_report
from tests.factories import human_why, judge_why

from .conftest import Shared, spec_campaign_once


@pytest.fixture(scope="module")
def shared(django_db_setup, django_db_blocker, tmp_path_factory):
    """The spec run and its labelled campaign (every item in the tuning split), built once for the module."""
    with spec_campaign_once(django_db_blocker, tmp_path_factory.mktemp("spec"), name="spec") as (case, campaign):
        yield Shared(case, campaign.pk)


def qids_of(record: ExportRecord) -> set[str]:
    return set(Item.objects.filter(pk__in=record.item_ids).values_list("row__question__qid", flat=True))


def lines(content: str) -> list[dict]:
    assert content.endswith("\n")
    return [json.loads(line) for line in content.splitlines()]


# ----------------------------------------------------------------------------------------------
# The report
# ----------------------------------------------------------------------------------------------


def test_the_campaign_takes_every_one_of_the_200_answers_and_holds_none_out(campaign):
    items = Item.objects.filter(campaign=campaign)
    assert items.count() == 200
    assert set(items.values_list("split", flat=True)) == {"tuning"}
    assert items.filter(judge_supported=False).count() == 36  # 8 false fails + 28 caught


def test_the_report_reproduces_the_spec_table_agreement_and_kappa(campaign):
    o = judge_report(campaign).as_dict()["overall"]

    assert o["n"] == 200
    assert round(o["agreement"], 3) == 0.850
    assert round(o["kappa"], 3) == 0.559
    assert o["confusion"] == {
        "people_supported": {"judge_supported": 142, "judge_unsupported": 8},
        "people_unsupported": {"judge_supported": 22, "judge_unsupported": 28},
    }
    assert (o["failures"], o["caught"], o["missed"], o["false_fails"]) == (50, 28, 22, 8)


def test_the_miss_rate_is_stated_in_words_as_22_of_the_50_unsupported_answers(campaign):
    o = judge_report(campaign).as_dict()["overall"]

    assert o["miss_sentence"] == "the judge passed 22 of the 50 answers people found unsupported"
    assert o["miss_rate"] == pytest.approx(0.44)


def test_the_judge_flags_18_percent_as_unsupported_against_a_true_25_percent(campaign):
    o = judge_report(campaign).as_dict()["overall"]

    assert o["judge_unsupported_rate"] == pytest.approx(0.18)
    assert o["people_unsupported_rate"] == pytest.approx(0.25)
    assert o["prevalence_sentence"] == "the judge flags 18 % as unsupported against a true 25 %"


def test_the_verdict_line_says_the_spec_judge_is_not_fit_to_gate(campaign):
    verdict = judge_report(campaign).as_dict()["verdict"]

    assert verdict["fit"] is False
    assert verdict["line"].startswith("VERDICT: not fit to gate: misses 44 % of unsupported answers (22 of 50")
    assert "kappa 0.56" in verdict["line"]


def test_the_verdict_follows_the_thresholds_the_owner_sets(campaign):
    campaign.fit_kappa, campaign.fit_miss_rate = 0.5, 0.5
    campaign.save(update_fields=["fit_kappa", "fit_miss_rate"])

    report = judge_report(campaign).as_dict()

    assert report["thresholds"] == {"kappa": 0.5, "miss_rate": 0.5}
    assert report["verdict"]["fit"] is True
    assert report["verdict"]["line"].startswith("VERDICT: fit to gate: ")


def test_kappas_bootstrap_interval_is_close_to_the_asymptotic_interval_of_statsmodels(campaign):
    o = judge_report(campaign).as_dict()["overall"]
    reference = cohens_kappa([[142, 8], [22, 28]])

    assert round(reference.kappa_low, 3) == 0.421 and round(reference.kappa_upp, 3) == 0.697
    assert o["kappa"] == pytest.approx(reference.kappa)
    assert o["kappa_low"] == pytest.approx(reference.kappa_low, abs=0.02)
    assert o["kappa_high"] == pytest.approx(reference.kappa_upp, abs=0.02)
    assert o["kappa_low"] < o["kappa"] < o["kappa_high"]


def test_the_miss_rate_interval_is_the_wilson_interval_of_statsmodels(campaign):
    o = judge_report(campaign).as_dict()["overall"]
    low, high = proportion_confint(22, 50, method="wilson")

    assert o["miss_low"] == pytest.approx(low, abs=1e-9)
    assert o["miss_high"] == pytest.approx(high, abs=1e-9)


def test_the_report_carries_no_warning_for_the_spec_campaign(campaign):
    report = judge_report(campaign).as_dict()

    assert report["warnings"] == []
    assert report["statuses"] == {"agreed": 200}
    assert report["leakage"] == {"leaked_exports": [], "leaked_items": 0}
    assert report["heldout_spent"] is None


def test_the_report_plans_more_labels_at_the_error_rates_it_measured(campaign, owner_client):
    report = judge_report(campaign)
    planned = plan_labels(
        size=200,
        miss_rate=22 / 50,
        false_fail_rate=8 / 150,
        strata={(s["stratum"], s["judge_supported"]): s["available"] for s in campaign.strata},
    )
    # the sample is the whole run (a Wilson interval on 50 failures) and the planner predicts the same width
    assert planned.plan.report.miss_rate == pytest.approx(
        (report.overall.miss_high - report.overall.miss_low) / 2, abs=0.01
    )
    assert report.more_labels == (
        f"with these 200 labelled answers the miss rate is {spread('miss_rate', planned.plan.report.miss_rate)}; "
        f"± 5 points on the miss rate is out of reach: every one of the run's 200 items gives ± 13 points"
    )
    out = io.StringIO()
    call_command("judge_report", campaign.name, stdout=out)
    assert f"plan: {report.more_labels}" in out.getvalue()
    page = owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()
    assert html.escape(f"Plan: {report.more_labels}.") in page


def test_the_corrected_pass_rate_recovers_the_true_75_percent_from_the_judges_82(campaign):
    corrected = judge_report(campaign).as_dict()["corrected"]

    assert corrected["raw"] == pytest.approx(0.82)  # 164 of 200 passed by the judge
    assert corrected["sensitivity"] == pytest.approx(142 / 150)
    assert corrected["specificity"] == pytest.approx(28 / 50)
    assert corrected["corrected"] == pytest.approx(0.75)  # people passed 150 of 200
    # people labelled every one of the run's 200 answers: its own pass rate is known, no sampling error is left
    # (the interval used to resample the run's pass count as if it were a second source of error)
    assert corrected["low"] == pytest.approx(0.75) == pytest.approx(corrected["high"])
    assert corrected["ppi"]["estimate"] == pytest.approx(0.75) == pytest.approx(corrected["ppi"]["high"])
    # every answer labelled: neither the labels nor the judge leave any variance, so no gain is claimed (and no
    # Infinity reaches the JSON)
    assert corrected["ppi"]["effective_labels"] == 200
    assert corrected["run_items"] == 200


# ----------------------------------------------------------------------------------------------
# The disagreement export (every item is in the tuning split)
# ----------------------------------------------------------------------------------------------


def test_the_jsonl_export_holds_exactly_the_30_disagreeing_answers(case, campaign):
    record = disagreements_export(campaign=campaign, fmt="jsonl")
    examples = lines(record.content)

    assert len(examples) == 30 == len(record.item_ids)
    assert qids_of(record) == case.qids("false_pass") | case.qids("false_fail")
    assert {e["question_id"] for e in examples if e["error"] == "false_pass"} == case.qids("false_pass")
    assert {e["question_id"] for e in examples if e["error"] == "false_fail"} == case.qids("false_fail")
    assert len(case.qids("false_pass")) == 22 and len(case.qids("false_fail")) == 8
    assert record.options["false_pass"] == 22 and record.options["false_fail"] == 8
    assert record.kind == ExportRecord.Kind.DISAGREEMENTS and record.fmt == "jsonl" and record.heldout_items == 0


def test_each_jsonl_example_holds_question_context_answer_labels_rationales_and_the_judges_verdict(case, campaign):
    examples = lines(disagreements_export(campaign=campaign, fmt="jsonl").content)

    for e in examples:
        qid = e["question_id"]
        assert e["question"] == f"What is the refund window of plan {qid}?"
        assert e["context"] == [f"CONTEXT-{qid}: the refund window is 10 days.", f"Unrelated chunk for {qid}."]
        assert e["answer"].startswith(f"ANSWER-{qid}: ")
        assert e["claim"] is None and e["claim_index"] is None
        assert e["human_rationales"] == [human_why(qid)]
        if e["error"] == "false_pass":
            assert (e["human_label"], e["judge_verdict"]) == ("unsupported", "supported")
            assert e["judge_rationale"] == f"Stated in chunk 1 for {qid}."
        else:
            assert (e["human_label"], e["judge_verdict"]) == ("supported", "unsupported")
            assert e["judge_rationale"] == judge_why(qid)


def test_the_examples_come_grouped_false_passes_first_then_false_fails(campaign):
    examples = lines(disagreements_export(campaign=campaign, fmt="jsonl").content)

    assert [e["error"] for e in examples] == ["false_pass"] * 22 + ["false_fail"] * 8


def test_the_chat_export_holds_the_same_30_items_as_system_user_assistant_messages(case, campaign):
    record = disagreements_export(campaign=campaign, fmt="chat")
    examples = lines(record.content)

    assert qids_of(record) == case.qids("false_pass") | case.qids("false_fail")
    assert len(examples) == 30
    for e in examples:
        roles = [m["role"] for m in e["messages"]]
        assert roles == ["system", "user", "assistant"]
        system, user, assistant = (m["content"] for m in e["messages"])
        qid = e["metadata"]["question_id"]
        assert system == campaign.run.judge_config.prompt
        assert f"What is the refund window of plan {qid}?" in user
        assert f"CONTEXT-{qid}" in user and f"ANSWER-{qid}" in user
        assert campaign.judge_question in user
        expected = "unsupported" if case.human[qid] == 0 else "supported"
        assert assistant.startswith(expected.upper() + ". ")
        assert human_why(qid) in assistant
        assert e["metadata"]["judge_verdict"] == ("supported" if case.judge[qid] else "unsupported")
        assert e["metadata"]["error"] == case.kind(qid)
        assert teaches_no_judge_rationale(assistant)


def teaches_no_judge_rationale(text: str) -> bool:
    """The assistant turn teaches the human answer, never the judge's wrong rationale."""
    return "JUDGEWHY" not in text


def test_the_csv_export_holds_the_same_30_items_with_every_column(case, campaign):
    record = disagreements_export(campaign=campaign, fmt="csv")
    rows = list(csv.DictReader(io.StringIO(record.content)))

    assert list(rows[0].keys()) == DISAGREEMENT_FIELDS
    assert len(rows) == 30
    assert {r["question_id"] for r in rows} == case.qids("false_pass") | case.qids("false_fail")
    for r in rows:
        qid = r["question_id"]
        assert r["error"] == case.kind(qid)
        assert r["question"] == f"What is the refund window of plan {qid}?"
        assert r["context"] == f"CONTEXT-{qid}: the refund window is 10 days.\n\nUnrelated chunk for {qid}."
        assert r["answer"].startswith(f"ANSWER-{qid}")
        assert r["human_label"] == ("supported" if case.human[qid] else "unsupported")
        assert r["human_rationales"] == human_why(qid)
        assert r["judge_verdict"] == ("supported" if case.judge[qid] else "unsupported")
        assert r["judge_rationale"] == (
            judge_why(qid) if r["error"] == "false_fail" else f"Stated in chunk 1 for {qid}."
        )


def test_a_balanced_export_gives_8_false_passes_and_8_false_fails(case, campaign):
    record = disagreements_export(campaign=campaign, fmt="jsonl", balanced=True)
    examples = lines(record.content)

    assert [e["error"] for e in examples].count("false_pass") == 8
    assert [e["error"] for e in examples].count("false_fail") == 8
    assert {e["question_id"] for e in examples if e["error"] == "false_fail"} == case.qids("false_fail")
    assert {e["question_id"] for e in examples if e["error"] == "false_pass"} < case.qids("false_pass")
    assert record.options["balanced"] is True


def test_a_limit_caps_the_number_of_examples(case, campaign):
    record = disagreements_export(campaign=campaign, fmt="jsonl", limit=10)

    assert len(lines(record.content)) == 10 == len(record.item_ids)
    assert qids_of(record) < case.qids("false_pass") | case.qids("false_fail")


def test_a_limit_with_balance_takes_half_of_the_limit_from_each_error_type(campaign):
    examples = lines(disagreements_export(campaign=campaign, fmt="jsonl", limit=6, balanced=True).content)

    assert sorted(e["error"] for e in examples) == ["false_fail"] * 3 + ["false_pass"] * 3


def test_a_limit_above_the_disagreements_gives_them_all(campaign):
    assert len(lines(disagreements_export(campaign=campaign, fmt="jsonl", limit=500).content)) == 30


def test_a_limit_below_one_is_refused(campaign):
    with pytest.raises(ExportError, match="positive"):
        disagreements_export(campaign=campaign, fmt="jsonl", limit=0)
    with pytest.raises(ExportError, match="format must be one of"):
        disagreements_export(campaign=campaign, fmt="xml")
    assert not ExportRecord.objects.filter(campaign=campaign).exists()


def test_the_same_seed_gives_the_same_export_and_another_seed_another_sample(campaign):
    first = disagreements_export(campaign=campaign, fmt="jsonl", balanced=True, seed=3)
    again = disagreements_export(campaign=campaign, fmt="jsonl", balanced=True, seed=3)
    other = [disagreement_examples(campaign, balanced=True, seed=s) for s in (4, 5, 6)]

    assert again.content == first.content and again.item_ids == first.item_ids
    assert (first.version, again.version) == (1, 2)
    assert any({e["item_id"] for e in o} != set(first.item_ids) for o in other)


def test_each_export_is_recorded_with_its_items_options_and_judge_config(owner, campaign):
    record = disagreements_export(campaign=campaign, fmt="csv", limit=12, seed=9, user=owner)

    stored = ExportRecord.objects.get(pk=record.pk)
    assert stored.created_by == owner
    assert stored.judge_config == campaign.run.judge_config
    assert stored.options["limit"] == 12 and stored.options["seed"] == 9 and stored.options["balanced"] is False
    assert len(stored.item_ids) == 12
    assert stored.content == record.content
