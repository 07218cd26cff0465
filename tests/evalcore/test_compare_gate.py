"""Paired comparisons and the release gate: the demo blocks on faithfulness, like is compared with
like, judge metrics need the same judge, margins per metric, decisions logged for good, and the
``gate`` command's table, JSON and exit codes (0 pass, 3 review, 4 block, 1 error)."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction

from evalcore.models import Comparison, GateDecisionRecord, Run
from evalcore.services.comparisons import ComparisonRefused, compare_runs
from evalcore.services.runs import run_import
from tests.factories import claims, demo_judge, make_demo_eval_set, make_eval_set, make_run

from .conftest import gate, subprocess_env

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _the_data_alone_decides(settings):
    """These tests are about the data rule, on runs whose judge nobody validated: the judge policy
    is off here (tests/evalcore/test_judge_policy.py tests what it does)."""
    settings.GATE_JUDGE_POLICY = "off"


DEMO_SLICES = {"all", "policy", "billing", "technical", "account"}


@pytest.fixture
def demo(db, tmp_path):
    """The demo eval set and its two runs, imported through the real import path (as load_demo does)."""
    paths = make_demo_eval_set(folder=tmp_path / "demo")
    judge = demo_judge(paths)
    base = run_import(
        path=paths["base_rows"],
        evalset="support-qa@1",
        name="chunks-512",
        k=5,
        judge_config=judge,
        chunks_path=paths["base_chunks"],
    ).run
    cand = run_import(
        path=paths["cand_rows"],
        evalset="support-qa@1",
        name="chunks-256-rerank",
        k=5,
        judge_config=judge,
        chunks_path=paths["cand_chunks"],
    ).run
    return {"paths": paths, "base": base, "cand": cand, "judge": judge}


def decision(comparison: Comparison, metric: str, slice_: str = "all") -> GateDecisionRecord:
    return GateDecisionRecord.objects.get(comparison=comparison, metric=metric, slice=slice_)


# ---------------------------------------------------------------------------------------------
# The demo: recall up, faithfulness down, the gate blocks on faithfulness
# ---------------------------------------------------------------------------------------------


def test_the_demo_comparison_blocks_on_faithfulness_while_recall_passes(demo, owner):
    outcome = compare_runs(base=demo["base"], candidate=demo["cand"], user=owner)
    comparison = outcome.comparison
    assert comparison.overall == "block" and outcome.report.overall == "block"
    assert comparison.n_paired == 400
    faith = decision(comparison, "faithfulness")
    assert faith.status == "block" and faith.high < 0 and faith.mean < 0
    assert faith.base_mean == pytest.approx(0.91, abs=0.02) and faith.cand_mean == pytest.approx(0.88, abs=0.02)
    recall = decision(comparison, "recall@5")
    assert recall.status == "pass" and recall.low > 0
    assert recall.base_mean == pytest.approx(0.78, abs=0.03) and recall.cand_mean == pytest.approx(0.84, abs=0.03)
    blocking = {d.metric for d in comparison.decisions.filter(status="block")}
    assert blocking == {"faithfulness"}
    assert {d.slice for d in comparison.decisions.filter(metric="faithfulness")} == DEMO_SLICES
    assert comparison.excluded_metrics == {}
    assert (faith.iterations, faith.seed, faith.margin, faith.created_by) == (10_000, 7, 0.02, owner)


def test_every_metric_and_slice_gets_a_logged_decision(demo):
    comparison = compare_runs(base=demo["base"], candidate=demo["cand"]).comparison
    metrics = demo["base"].summary["metrics"]
    assert set(comparison.metrics) == set(metrics)
    assert comparison.decisions.count() == len(metrics) * len(DEMO_SLICES)
    for record in comparison.decisions.all():
        assert record.base_id == demo["base"].pk and record.candidate_id == demo["cand"].pk
        assert record.status in ("pass", "review", "block") and record.message


def test_without_slices_only_overall_decisions_are_made(demo):
    comparison = compare_runs(
        base=demo["base"], candidate=demo["cand"], slice_by=None, metrics=["faithfulness", "recall@5"]
    ).comparison
    assert sorted(comparison.decisions.values_list("metric", "slice")) == [("faithfulness", "all"), ("recall@5", "all")]


def test_the_demo_loads_with_the_load_demo_command_and_its_gate_blocks(db, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    call_command("load_demo", stdout=out)  # safe to run twice
    assert "Created support-qa v1 with 400 questions." in out.getvalue()
    assert "Nothing new" in out.getvalue()
    assert Run.objects.count() == 4
    code, stdout, _ = gate("--base", "chunks-512", "--candidate", "chunks-256-rerank")
    assert code == 4
    assert "OVERALL: BLOCK" in stdout and "faithfulness" in stdout


# ---------------------------------------------------------------------------------------------
# Like with like
# ---------------------------------------------------------------------------------------------


def test_runs_on_different_versions_are_refused_with_what_to_do(demo, tmp_path):
    questions = [json.loads(line) for line in demo["paths"]["questions"].read_text().splitlines()][:50]
    make_eval_set(folder=tmp_path, questions=questions, name="support-qa")
    rows = [json.loads(line) for line in demo["paths"]["cand_rows"].read_text().splitlines()][:50]
    other = make_run(folder=tmp_path, rows=rows, evalset="support-qa@2", name="on-v2", k=5, judge_config=demo["judge"])
    with pytest.raises(ComparisonRefused) as excinfo:
        compare_runs(base=demo["base"], candidate=other)
    message = str(excinfo.value)
    assert "'chunks-512' ran on support-qa v1 and 'on-v2' on support-qa v2" in message
    assert "Run the baseline on support-qa v2 first" in message
    assert Comparison.objects.count() == 0 and GateDecisionRecord.objects.count() == 0


def test_a_run_is_not_compared_with_itself(demo):
    with pytest.raises(ComparisonRefused, match="same run"):
        compare_runs(base=demo["base"], candidate=demo["base"])
    assert Comparison.objects.count() == 0


def test_judge_metrics_are_not_compared_across_judge_configs_but_retrieval_still_is(demo):
    rescored = run_import(
        path=demo["paths"]["cand_rows"],
        evalset="support-qa@1",
        name="new-judge",
        k=5,
        judge_config={**demo["judge"], "model_version": "2026-09"},
        chunks_path=demo["paths"]["cand_chunks"],
    ).run
    assert rescored.judge_config_id != demo["base"].judge_config_id
    outcome = compare_runs(base=demo["base"], candidate=rescored)
    comparison = outcome.comparison
    assert set(comparison.excluded_metrics) == {"faithfulness", "answer_relevance"}
    why = comparison.excluded_metrics["faithfulness"]
    assert "different judge configs" in why and "Re-score the baseline with the candidate's judge first" in why
    gated = set(comparison.decisions.values_list("metric", flat=True))
    assert gated == {"recall@5", "precision@5", "rr", "ndcg@5", "abstention"}
    assert decision(comparison, "recall@5").status == "pass"
    assert comparison.overall != "block"  # faithfulness, the blocking metric, is not compared


def test_asking_only_for_a_judge_metric_across_judges_is_refused_with_what_to_do(demo):
    rescored = run_import(
        path=demo["paths"]["cand_rows"],
        evalset="support-qa@1",
        name="new-judge",
        k=5,
        judge_config={**demo["judge"], "temperature": 0.7},
        chunks_path=demo["paths"]["cand_chunks"],
    ).run
    with pytest.raises(ComparisonRefused) as excinfo:
        compare_runs(base=demo["base"], candidate=rescored, metrics=["faithfulness"])
    assert "nothing to compare" in str(excinfo.value) and "Re-score the baseline" in str(excinfo.value)
    assert Comparison.objects.count() == 0


def test_runs_that_answered_no_question_in_common_are_refused(demo, tmp_path):
    rows = [json.loads(line) for line in demo["paths"]["cand_rows"].read_text().splitlines()]
    first = make_run(folder=tmp_path, rows=rows[:10], evalset="support-qa", name="first-ten", k=5)
    last = make_run(folder=tmp_path, rows=rows[-10:], evalset="support-qa", name="last-ten", k=5)
    with pytest.raises(ComparisonRefused, match="answered no question in common"):
        compare_runs(base=first, candidate=last)
    assert Comparison.objects.count() == 0


def test_a_partial_candidate_is_paired_on_the_questions_both_answered(demo, tmp_path):
    rows = [json.loads(line) for line in demo["paths"]["cand_rows"].read_text().splitlines()][:150]
    partial = make_run(
        folder=tmp_path,
        rows=rows,
        evalset="support-qa",
        name="partial",
        k=5,
        judge_config=demo["judge"],
        chunks_path=demo["paths"]["cand_chunks"],
    )
    comparison = compare_runs(base=demo["base"], candidate=partial, metrics=["recall@5"], slice_by=None).comparison
    assert comparison.n_paired == 150
    assert any("paired on the 150 questions both runs answered" in note for note in comparison.notes)


# ---------------------------------------------------------------------------------------------
# Synthetic runs with known outcomes: margins and exit codes
# ---------------------------------------------------------------------------------------------


def test_margins_are_per_metric_with_a_default(synthetic):
    runs = synthetic
    strict = compare_runs(
        base=runs["base"], candidate=runs["slightly-worse"], metrics=["faithfulness", "recall@1"], slice_by=None
    )
    faith = decision(strict.comparison, "faithfulness")
    assert faith.margin == 0.02 and faith.status == "review" and faith.low < -0.02 <= faith.high
    lenient = compare_runs(
        base=runs["base"],
        candidate=runs["slightly-worse"],
        metrics=["faithfulness", "recall@1"],
        slice_by=None,
        margins={"faithfulness": 0.1},
    )
    assert decision(lenient.comparison, "faithfulness").margin == 0.1
    assert decision(lenient.comparison, "faithfulness").status == "pass"
    assert decision(lenient.comparison, "recall@1").margin == 0.02
    assert lenient.comparison.margins == {"faithfulness": 0.1, "recall@1": 0.02}
    wide = compare_runs(
        base=runs["base"], candidate=runs["slightly-worse"], metrics=["faithfulness"], slice_by=None, margin=0.1
    )
    assert decision(wide.comparison, "faithfulness").margin == 0.1


def test_a_negative_margin_is_refused(synthetic):
    with pytest.raises(ComparisonRefused, match="must be 0 or more"):
        compare_runs(base=synthetic["base"], candidate=synthetic["same"], margins={"faithfulness": -0.1})
    assert Comparison.objects.count() == 0


def test_pass_review_and_block_follow_the_non_inferiority_rule(synthetic):
    def status(name):
        return compare_runs(
            base=synthetic["base"], candidate=synthetic[name], metrics=["faithfulness"], slice_by=None
        ).comparison

    same, mixed, worse = status("same"), status("mixed"), status("worse")
    assert same.overall == "pass"
    assert mixed.overall == "review"
    review = decision(mixed, "faithfulness")
    assert review.low < -0.02 and review.high > 0
    assert worse.overall == "block"
    assert decision(worse, "faithfulness").mean == pytest.approx(-0.25)


def test_a_lower_is_better_metric_blocks_on_a_rise(db, tmp_path):
    questions = [{"id": f"s{i}", "question": f"Q{i}?"} for i in range(30)]
    make_eval_set(folder=tmp_path, questions=questions, name="lat")
    for name, latency in (("base", 1.0), ("slow", 2.0)):
        rows = [{"id": f"s{i}", "scores": {"latency": latency + (i % 3) * 0.1}} for i in range(30)]
        make_run(folder=tmp_path, rows=rows, evalset="lat", name=name, k=1)
    base, slow = Run.objects.get(name="base"), Run.objects.get(name="slow")
    higher = compare_runs(base=base, candidate=slow, metrics=["latency"], slice_by=None).comparison
    lower = compare_runs(
        base=base, candidate=slow, metrics=["latency"], slice_by=None, lower_is_better=["latency"]
    ).comparison
    assert higher.overall == "pass" and lower.overall == "block"
    assert decision(lower, "latency").higher_is_better is False


def test_a_metric_no_question_is_scored_on_in_both_runs_is_listed_as_not_compared_never_as_passed(synthetic):
    comparison = compare_runs(base=synthetic["base"], candidate=synthetic["worse"]).comparison
    assert "abstention" not in comparison.metrics  # no question of this set is unanswerable
    assert "no question is scored on it in both runs" in comparison.excluded_metrics["abstention"]
    assert not comparison.decisions.filter(metric="abstention").exists()
    assert "abstention" not in comparison.margins


def test_gating_only_on_a_metric_no_question_is_scored_on_is_refused_not_passed(synthetic):
    with pytest.raises(ComparisonRefused, match="nothing to compare: abstention: no question is scored on it"):
        compare_runs(base=synthetic["base"], candidate=synthetic["same"], metrics=["abstention"])
    assert Comparison.objects.count() == 0
    code, _, err = gate("--base", "base", "--candidate", "same", "--metric", "abstention")
    assert code == 1 and "nothing to compare" in err


# ---------------------------------------------------------------------------------------------
# Decisions are a log
# ---------------------------------------------------------------------------------------------


def test_logged_decisions_cannot_be_changed_by_save_or_update(synthetic):
    comparison = compare_runs(base=synthetic["base"], candidate=synthetic["worse"], metrics=["faithfulness"]).comparison
    record = decision(comparison, "faithfulness")
    before = list(GateDecisionRecord.objects.values())
    record.status = "pass"
    with pytest.raises(ValueError, match="never changed"):
        record.save()
    with pytest.raises(ValueError, match="never changed"):
        GateDecisionRecord.objects.filter(pk=record.pk).update(status="pass")
    with pytest.raises(ValueError), transaction.atomic():  # bulk_update runs in atomic(savepoint=False)
        GateDecisionRecord.objects.bulk_update([record], ["status"])
    comparison.overall = "pass"
    with pytest.raises(ValueError, match="never changed"):
        comparison.save()
    with pytest.raises(ValueError, match="never changed"):
        Comparison.objects.filter(pk=comparison.pk).update(overall="pass")
    assert list(GateDecisionRecord.objects.values()) == before
    assert Comparison.objects.get(pk=comparison.pk).overall == "block"


def test_running_a_comparison_again_adds_to_the_log_instead_of_overwriting(synthetic):
    first = compare_runs(
        base=synthetic["base"], candidate=synthetic["worse"], metrics=["faithfulness"], slice_by=None
    ).comparison
    second = compare_runs(
        base=synthetic["base"], candidate=synthetic["worse"], metrics=["faithfulness"], slice_by=None, margin=0.5
    ).comparison
    assert Comparison.objects.count() == 2 and GateDecisionRecord.objects.count() == 2
    assert decision(first, "faithfulness").margin == 0.02 and decision(second, "faithfulness").margin == 0.5
    assert (first.overall, second.overall) == ("block", "pass")


def test_a_logged_comparison_keeps_its_runs(synthetic):
    from django.db.models import ProtectedError

    compare_runs(base=synthetic["base"], candidate=synthetic["worse"], metrics=["faithfulness"])
    with pytest.raises(ProtectedError):
        Run.objects.get(name="worse").delete()


# ---------------------------------------------------------------------------------------------
# The gate command
# ---------------------------------------------------------------------------------------------


def test_the_gate_command_prints_a_table_and_exits_0_on_pass(synthetic):
    code, out, _ = gate("--base", "base", "--candidate", "same", "--metric", "faithfulness", "--slice-by", "none")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(
        "syn v1 · baseline base vs candidate same · 40 paired questions · margin 0.02 · 10,000 resamples, seed 7"
    )
    assert any(line.startswith("METRIC") and "95% CI" in line and "STATUS" in line for line in lines)
    row = next(line for line in lines if line.startswith("faithfulness"))
    assert "0.500" in row and "PASS" in row
    assert "OVERALL: PASS" in out
    assert Comparison.objects.count() == 1


def test_the_gate_command_exits_3_on_review(synthetic):
    code, out, _ = gate("--base", "base", "--candidate", "mixed", "--metric", "faithfulness", "--slice-by", "none")
    assert code == 3
    assert "OVERALL: REVIEW" in out


def test_the_gate_command_exits_4_on_block_and_says_why(synthetic):
    code, out, _ = gate("--base", "base", "--candidate", "worse", "--metric", "faithfulness")
    assert code == 4
    overall = next(line for line in out.splitlines() if line.startswith("OVERALL"))
    assert re.match(r"OVERALL: BLOCK\s+\(faithfulness: real drop -0\.250 \[-0\.\d+, -0\.\d+\]\)", overall), overall
    assert sum(1 for line in out.splitlines() if line.startswith("faithfulness")) == 3  # all, a, b


def test_the_gate_command_takes_per_metric_margins(synthetic):
    code, out, _ = gate(
        "--base",
        "base",
        "--candidate",
        "slightly-worse",
        "--metric",
        "faithfulness",
        "--metric",
        "recall@1",
        "--slice-by",
        "none",
        "--margin-for",
        "faithfulness=0.1",
        "--margin-for",
        "recall@1=0.09",  # 40 unchanged pass/fail questions leave ±0.088 of doubt (Tango's interval)
    )
    assert code == 0, out
    record = decision(Comparison.objects.get(), "faithfulness")
    assert record.margin == 0.1 and decision(Comparison.objects.get(), "recall@1").margin == 0.09


def test_the_gate_command_prints_json_with_every_decision_and_its_interval(synthetic):
    code, out, err = gate("--base", "base", "--candidate", "worse", "--json")
    assert code == 4
    data = json.loads(out)
    assert data["overall"] == "block"
    assert (data["base"]["name"], data["candidate"]["name"], data["eval_set"]) == ("base", "worse", "syn v1")
    assert (data["iterations"], data["seed"], data["n_paired"]) == (10_000, 7, 40)
    comparison = Comparison.objects.get()
    assert len(data["decisions"]) == comparison.decisions.count() == len(comparison.metrics) * 3
    for item in data["decisions"]:
        assert {
            "metric",
            "slice",
            "status",
            "mean",
            "low",
            "high",
            "margin",
            "n",
            "base_mean",
            "cand_mean",
            "message",
        } <= set(item)
        record = decision(comparison, item["metric"], item["slice"])
        assert (item["status"], item["low"], item["high"]) == (record.status, record.low, record.high)
    faith = next(d for d in data["decisions"] if d["metric"] == "faithfulness" and d["slice"] == "all")
    assert faith["low"] <= faith["mean"] <= faith["high"] < 0
    assert err == ""  # --json keeps standard error quiet too (no progress bar)


def test_the_gate_command_json_lists_excluded_judge_metrics(synthetic):
    code, out, _ = gate("--base", "base", "--candidate", "other-judge", "--json", "--margin", "0.5")
    data = json.loads(out)
    assert "Re-score the baseline" in data["excluded_metrics"]["faithfulness"]
    assert {d["metric"] for d in data["decisions"]} == {"recall@1", "precision@1", "rr", "ndcg@1"}
    assert code == 0


def test_the_gate_command_table_says_which_metrics_were_not_compared(synthetic):
    code, out, _ = gate("--base", "base", "--candidate", "other-judge", "--margin", "0.5")
    assert code == 0
    assert "not compared: faithfulness: scored by different judge configs" in out


def test_the_gate_command_exits_1_for_an_unknown_run(synthetic):
    code, out, err = gate("--base", "base", "--candidate", "nope")
    assert code == 1
    assert "there is no run named 'nope'" in err
    assert Comparison.objects.count() == 0


def test_the_gate_command_exits_1_for_runs_on_different_versions(synthetic, tmp_path):
    make_eval_set(folder=tmp_path / "v2", questions=[{"id": "s00", "question": "Question 0?"}], name="syn")
    make_run(folder=tmp_path / "v2", rows=[{"id": "s00", "claims": claims(1)}], evalset="syn@2", name="newer", k=1)
    code, _, err = gate("--base", "base", "--candidate", "newer")
    assert code == 1
    assert "Run the baseline on syn v2 first" in err
    assert Comparison.objects.count() == 0


def test_the_gate_command_exits_1_for_a_negative_margin(synthetic):
    code, _, err = gate("--base", "base", "--candidate", "same", "--margin", "-0.1")
    assert code == 1 and "margin for every metric must be 0 or more" in err


def test_the_gate_command_raises_command_error_when_called_from_python(synthetic):
    with pytest.raises(CommandError, match="there is no run named"):
        call_command("gate", "--base", "base", "--candidate", "missing")
    with pytest.raises(SystemExit) as stop:
        call_command("gate", "--base", "base", "--candidate", "worse", "--metric", "faithfulness", stdout=io.StringIO())
    assert stop.value.code == 4


@pytest.mark.slow  # seconds of subprocesses or simulation: CI runs it (./dev test -m "")
@pytest.mark.django_db(transaction=True)
def test_manage_py_gate_exits_4_on_block_and_1_on_error_as_a_ci_pipeline_sees_it(synthetic):
    """A real ``manage.py gate`` process on the test database: the exit codes a CI job reads."""
    import subprocess
    import sys
    from pathlib import Path

    manage = Path(__file__).resolve().parents[2] / "manage.py"
    env = subprocess_env(CELERY_TASK_ALWAYS_EAGER="1", GATE_JUDGE_POLICY="off")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(manage), "gate", *args], env=env, capture_output=True, text=True, timeout=120
        )

    blocked = run("--base", "base", "--candidate", "worse", "--metric", "faithfulness", "--slice-by", "none")
    assert blocked.returncode == 4, blocked.stderr
    assert "OVERALL: BLOCK" in blocked.stdout
    passed = run("--base", "base", "--candidate", "same", "--metric", "faithfulness", "--slice-by", "none", "--json")
    assert passed.returncode == 0, passed.stderr
    assert json.loads(passed.stdout)["overall"] == "pass"
    failed = run("--base", "base", "--candidate", "missing")
    assert failed.returncode == 1
    assert "there is no run named 'missing'" in failed.stderr
    assert Comparison.objects.count() == 2  # the process logged its decisions in this database
