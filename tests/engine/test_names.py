"""One definition each, in the engine, of the gate's statuses and of the retrieval metrics' names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from evalcore import engine
from evalcore.engine import (
    BLOCK,
    DEFAULT_RETRIEVAL_METRICS,
    PASS,
    RETRIEVAL_METRICS,
    REVIEW,
    STATUSES,
    is_retrieval_metric,
    metric_column,
    overall_status,
    retrieval_metric_names,
    score_retrieval,
)

ENGINE = Path(engine.__file__).parent

# --------------------------------------------------------------------------------------------
# Statuses
# --------------------------------------------------------------------------------------------


def test_the_statuses_are_pass_review_block_in_that_order():
    assert (PASS, REVIEW, BLOCK) == STATUSES == ("pass", "review", "block")


def _status_literals():
    """Every string constant "pass", "review" or "block" in the engine's code (docstrings left out)."""
    found = []
    for path in sorted(ENGINE.glob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in STATUSES and id(node) not in docstrings:
                found.append((path.name, node.lineno, node.value))
    return found


def test_the_status_strings_are_written_once_in_the_engine():
    literals = _status_literals()
    assert [value for _, _, value in literals] == list(STATUSES), literals
    assert {(name, line) for name, line, _ in literals} == {("release_gate.py", literals[0][1])}


def test_overall_status_is_the_worst_status_and_refuses_unknown_ones():
    assert overall_status([PASS, REVIEW, PASS]) == REVIEW
    assert overall_status([REVIEW, BLOCK]) == BLOCK
    assert overall_status([PASS]) == PASS
    with pytest.raises(ValueError, match=r"^unknown gate status\(es\) 'ok'; a status is one of"):
        overall_status([PASS, "ok"])


# --------------------------------------------------------------------------------------------
# Metric names
# --------------------------------------------------------------------------------------------


def test_retrieval_metric_names_are_the_columns_score_retrieval_writes():
    assert retrieval_metric_names(5) == ["recall@5", "precision@5", "rr", "ndcg@5"]
    frame = score_retrieval([["a"]], [{"a"}], [1], k_label=10, metrics=RETRIEVAL_METRICS)
    assert retrieval_metric_names(10, metrics=RETRIEVAL_METRICS) == list(frame.columns[-len(RETRIEVAL_METRICS) :])
    assert retrieval_metric_names(3, metrics=DEFAULT_RETRIEVAL_METRICS) == retrieval_metric_names(3)
    assert retrieval_metric_names("k", metrics=["rr@k"]) == ["rr@k"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("recall@5", True),
        ("precision@10", True),
        ("rr", True),
        ("rr@5", True),
        ("ndcg@k", True),
        ("ndcg", True),
        ("faithfulness", False),
        ("abstention", False),
        ("recall_5", False),
        ("mrr", False),
        ("", False),
        ("ndcg_linear@5", False),
    ],
)
def test_is_retrieval_metric(name, expected):
    assert is_retrieval_metric(name) is expected


def test_every_name_the_engine_writes_is_a_retrieval_metric():
    for k in (1, 5, "k"):
        assert all(is_retrieval_metric(name) for name in retrieval_metric_names(k, metrics=RETRIEVAL_METRICS))


def test_metric_names_refuse_what_is_not_a_retrieval_metric():
    with pytest.raises(ValueError, match=r"^unknown retrieval metric 'faithfulness'"):
        metric_column("faithfulness", 5)
    with pytest.raises(ValueError, match=r"^unknown retrieval metric 'mrr'"):
        retrieval_metric_names(5, metrics=["recall", "mrr"])
    with pytest.raises(ValueError, match=r"^metrics must be a sequence of metric names"):
        retrieval_metric_names(5, metrics="recall")
    with pytest.raises(TypeError, match=r"^name must be a metric's column name \(a str\), got NoneType"):
        is_retrieval_metric(None)
