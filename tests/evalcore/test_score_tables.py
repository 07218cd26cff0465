"""A run's score table gives the gate exactly what its rows hold: the same frame, row for row, and the
same decisions, whichever of the two it reads."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from evalcore.models import Comparison, Question, RunScoreTable
from evalcore.selectors import run_rows_frame
from evalcore.services.comparisons import compare_runs
from tests.factories import JUDGE, make_eval_set, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def without_tables(monkeypatch):
    """Read every run from its rows, as for a run imported before tables were kept (tables are never deleted)."""

    def hide() -> None:
        monkeypatch.setattr("evalcore.selectors.score_table_read", lambda run, **kwargs: None)

    return hide


N = 240
METRICS = ["faithfulness", "recall@3", "rr", "ndcg@3", "answer_relevance", "latency", "abstention"]


def _rows(rng: random.Random, questions: list[dict]) -> list[dict]:
    rows = []
    for q in questions:
        supported = rng.randint(0, 3)
        scores: dict = {"answer_relevance": rng.choice([1, 2, 3, 4, 5, None])}
        if rng.random() < 0.8:  # a metric some rows do not have
            scores["latency"] = round(rng.uniform(0.1, 3.0), 3)
        rows.append(
            {
                "id": q["id"],
                "retrieved": rng.sample([f"d{j}" for j in range(12)], 6),
                "context_ids": ["d1"],
                "context": "text",
                "answer": "An answer.",
                "declined": not q["answerable"] and rng.random() < 0.5,
                "claims": [{"text": f"C{j}.", "supported": j < supported} for j in range(3)],
                "scores": scores,
            }
        )
    rng.shuffle(rows)  # the file's order is not the questions' order
    return rows


@pytest.fixture
def two_runs(tmp_path):
    rng = random.Random(11)
    questions = []
    for i in range(N):
        answerable = i % 7 != 0
        gold = [{"doc": f"d{j}", "grade": rng.randint(1, 3)} for j in rng.sample(range(12), 2)] if answerable else []
        questions.append(
            {"id": f"q{i:04d}", "question": f"Q{i}?", "type": "abcd"[i % 4], "answerable": answerable, "gold": gold}
        )
    rng.shuffle(questions)
    make_eval_set(folder=tmp_path, questions=questions, name="tables")
    runs = [
        make_run(folder=tmp_path, rows=_rows(rng, questions), evalset="tables", name=name, k=3, judge_config=JUDGE)
        for name in ("base", "cand")
    ]
    return runs


def test_an_imported_run_keeps_a_table_the_same_as_its_rows(two_runs, without_tables):
    wanted = [*METRICS, "never-scored"]
    kept = {}
    for run in two_runs:
        assert RunScoreTable.objects.filter(run=run, row_count=N).exists()
        kept[run] = {row_ids: run_rows_frame(run, metrics=wanted, row_ids=row_ids) for row_ids in (False, True)}
    without_tables()
    for run in two_runs:
        in_eval_set_order = list(
            Question.objects.filter(version=run.version).order_by("pk").values_list("qid", flat=True)
        )
        for row_ids, frame in kept[run].items():
            assert frame["never-scored"].isna().all() and frame["latency"].isna().any()
            assert list(frame.index) == in_eval_set_order  # the questions' order, not the run file's
            pd.testing.assert_frame_equal(frame, run_rows_frame(run, metrics=wanted, row_ids=row_ids))


def test_the_gate_decides_the_same_from_the_table_and_from_the_rows(two_runs, without_tables):
    base, cand = two_runs

    def decisions() -> list[tuple]:
        outcome = compare_runs(base=base, candidate=cand, iterations=2000, seed=5)
        return [(d.metric, d.slice, d.status, d.mean, d.low, d.high, d.n) for d in outcome.report.decisions]

    from_tables = decisions()
    changed_from_tables = Comparison.objects.latest("pk").changed
    without_tables()
    from_rows = decisions()
    assert len(from_tables) > 20 and from_tables == from_rows
    assert Comparison.objects.latest("pk").changed == changed_from_tables


def test_a_metric_only_the_last_batch_has_is_nan_in_the_earlier_batches_of_the_table(
    tmp_path, monkeypatch, without_tables
):
    """The table is written a batch at a time: its columns are every metric any batch had."""
    monkeypatch.setattr("evalcore.services.runs.BATCH", 7)
    questions = [{"id": f"q{i:02d}", "question": f"Q{i}?", "type": "ab"[i % 2], "gold": [{"doc": "d1", "grade": 1}]}
                 for i in range(20)]  # fmt: skip
    make_eval_set(folder=tmp_path, questions=questions, name="late")
    rows = [
        {"id": q["id"], "retrieved": ["d1"], "context_ids": ["d1"], "context": "t", "answer": "a",
         "scores": {"late_metric": 0.5} if i >= 14 else {}}
        for i, q in enumerate(questions)
    ]  # fmt: skip
    run = make_run(folder=tmp_path, rows=rows[::-1], evalset="late", name="r", k=1)
    frame = run_rows_frame(run, metrics=["late_metric", "recall@1"], row_ids=True)
    without_tables()  # the same frame read from the rows
    pd.testing.assert_frame_equal(frame, run_rows_frame(run, metrics=["late_metric", "recall@1"], row_ids=True))
    assert frame["late_metric"].notna().sum() == 6 and list(frame.index) == sorted(frame.index)
    assert run.summary["slices"]["all"]["metrics"]["late_metric"]["n"] == 6
