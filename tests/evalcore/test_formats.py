"""Readers and adapters: CSV (JSON cells), Parquet, a Ragas result table, TREC qrels and runs.

The TREC test uses trec_eval's own test files and checks our per-topic numbers against
trec_eval's expected output (out.test.aq).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest

from evalcore.models import Question, Row
from evalcore.services.evalsets import evalset_import
from evalcore.services.problems import ImportFailed, ProblemCollector
from evalcore.services.runs import run_import
from evalcore.services.trec import read_trec_run
from tests.factories import QUESTIONS, ok_row
from tests.files import write_jsonl

from .conftest import db_counts, refused, write_csv

pytestmark = pytest.mark.django_db

TREC = Path("/work/shared/data/trec_eval")


def stored_questions(version) -> dict:
    return {
        q.qid: (q.text, q.qtype, q.answerable, q.reference_answer, q.gold)
        for q in Question.objects.filter(version=version)
    }


# ---------------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------------


def questions_as_csv(tmp_path):
    return write_csv(
        tmp_path / "questions.csv",
        ["id", "question", "type", "answerable", "reference_answer", "gold"],
        [
            [q["id"], q["question"], q["type"], str(q["answerable"]).lower(), q["reference_answer"], q["gold"]]
            for q in QUESTIONS
        ],
    )


def test_a_csv_eval_set_with_json_cells_imports_the_same_content_as_json_lines(db, tmp_path, questions_file):
    from_csv = evalset_import(path=questions_as_csv(tmp_path), name="from-csv").version
    from_jsonl = evalset_import(path=questions_file, name="from-jsonl").version
    assert stored_questions(from_csv) == stored_questions(from_jsonl)
    assert from_csv.content_hash == from_jsonl.content_hash
    assert Question.objects.get(version=from_csv, qid="q5").gold == [
        {"doc": "d5", "grade": 2, "start": 100, "end": 180}
    ]
    assert Question.objects.get(version=from_csv, qid="q4").answerable is False


def test_a_csv_run_with_json_cells_and_score_columns_imports(version, tmp_path):
    path = write_csv(
        tmp_path / "rows.csv",
        [
            "id",
            "retrieved",
            "context_ids",
            "context",
            "answer",
            "declined",
            "claims",
            "scores.answer_relevance",
            "latency_ms",
        ],
        [
            [
                "q1",
                ["d1", "d9", "d3"],
                ["d1", "d9"],
                "ctx",
                "An answer.",
                "false",
                [{"text": "A.", "supported": True}],
                "4",
                "120",
            ],
            ["q4", [], "", "", "I do not know.", "true", [], "", "80"],
        ],
    )
    run = run_import(path=path, evalset="support", name="csv", k=2).run
    q1 = Row.objects.get(run=run, question__qid="q1")
    assert q1.retrieved == ["d1", "d9", "d3"] and q1.context_ids == ["d1", "d9"]
    assert q1.scores["answer_relevance"] == 4.0 and q1.scores["faithfulness"] == 1.0
    assert q1.scores["recall@2"] == pytest.approx(0.5)
    assert q1.metadata == {"latency_ms": "120"}
    q4 = Row.objects.get(run=run, question__qid="q4")
    assert q4.declined is True and q4.scores["abstention"] == 1.0 and q4.scores["answer_relevance"] is None
    assert run.row_count == 2


# ---------------------------------------------------------------------------------------------
# Parquet
# ---------------------------------------------------------------------------------------------


def test_a_parquet_eval_set_imports_the_same_content_as_json_lines(db, tmp_path, questions_file):
    path = tmp_path / "questions.parquet"
    frame = pd.DataFrame(
        [
            {
                **q,
                "gold": [
                    {"doc": g["doc"], "grade": g["grade"], "start": g.get("start"), "end": g.get("end")}
                    for g in q["gold"]
                ],
            }
            for q in QUESTIONS
        ]
    )
    frame.to_parquet(path, engine="pyarrow", index=False)
    from_parquet = evalset_import(path=path, name="from-parquet").version
    from_jsonl = evalset_import(path=questions_file, name="from-jsonl").version
    assert stored_questions(from_parquet) == stored_questions(from_jsonl)
    assert from_parquet.content_hash == from_jsonl.content_hash


def test_a_parquet_run_with_list_and_struct_columns_imports(version, tmp_path):
    path = tmp_path / "rows.parquet"
    rows = [ok_row(q["id"]) for q in QUESTIONS]
    for row in rows:
        row["claims"] = [{"text": c["text"], "supported": c["supported"]} for c in row["claims"]]
    pd.DataFrame(rows).to_parquet(path, engine="pyarrow", index=False)
    run = run_import(path=path, evalset="support", name="pq", k=3).run
    jsonl = run_import(path=write_jsonl(tmp_path / "rows.jsonl", rows), evalset="support", name="js", k=3).run
    assert run.row_count == 5
    for qid in ("q1", "q2", "q4", "q5"):
        assert (
            Row.objects.get(run=run, question__qid=qid).scores == Row.objects.get(run=jsonl, question__qid=qid).scores
        )
    assert Row.objects.get(run=run, question__qid="q1").retrieved == ["d1", "d9", "d3", "d4", "d5", "d7"]


def test_a_file_that_is_not_parquet_is_refused_and_nothing_is_written(version, tmp_path):
    path = tmp_path / "rows.parquet"
    path.write_text("this is not parquet")
    before = db_counts()
    with pytest.raises(ImportFailed, match="rows.parquet: not a readable Parquet file"):
        run_import(path=path, evalset="support", name="pq", k=3)
    assert db_counts() == before


# ---------------------------------------------------------------------------------------------
# Ragas result tables
# ---------------------------------------------------------------------------------------------

RAGAS = [
    {
        "user_input": "What is the refund window?",
        "retrieved_contexts": ["Refunds within 30 days.", "Shipping is free."],
        "response": "30 days.",
        "reference": "30 days.",
        "faithfulness": 1.0,
        "answer_relevancy": 0.93,
        "context_precision": 1.0,
    },
    {
        "user_input": "What is the late fee?",
        "retrieved_contexts": ["Late fee: 5 %."],
        "response": "It is 10 %.",
        "reference": "5 %.",
        "faithfulness": 0.0,
        "answer_relevancy": 0.88,
        "context_precision": 1.0,
    },
]


def check_ragas_run(run):
    assert run.row_count == 2 and run.question_count == 5
    first = Row.objects.get(run=run, question__qid="q1")
    assert first.scores["faithfulness"] == 1.0 and first.scores["answer_relevancy"] == pytest.approx(0.93)
    assert first.scores["context_precision"] == 1.0
    assert first.context == "Refunds within 30 days.\n\nShipping is free."
    assert first.answer == "30 days."
    assert Row.objects.get(run=run, question__qid="q2").scores["faithfulness"] == 0.0
    assert {"faithfulness", "answer_relevancy", "context_precision"} <= set(run.summary["metrics"])


def test_a_ragas_table_as_parquet_is_matched_to_questions_by_their_text(version, tmp_path):
    path = tmp_path / "ragas.parquet"
    pd.DataFrame(RAGAS).to_parquet(path, engine="pyarrow", index=False)
    check_ragas_run(run_import(path=path, evalset="support", name="ragas", fmt="ragas", k=2).run)


def test_a_ragas_table_as_csv_with_json_lists_is_matched_to_questions_by_their_text(version, tmp_path):
    columns = list(RAGAS[0])
    path = write_csv(tmp_path / "ragas.csv", columns, [[r[c] for c in columns] for r in RAGAS])
    check_ragas_run(run_import(path=path, evalset="support", name="ragas", fmt="ragas", k=2).run)


def test_a_ragas_table_saved_with_pandas_to_csv_imports(version, tmp_path):
    """pandas writes list columns as Python literals (['a', 'b']), which is what a saved Ragas result looks like."""
    path = tmp_path / "ragas.csv"
    pd.DataFrame(RAGAS).to_csv(path, index=False)
    assert "['Refunds within 30 days.', 'Shipping is free.']" in path.read_text()
    check_ragas_run(run_import(path=path, evalset="support", name="ragas", fmt="ragas", k=2).run)


def test_a_ragas_score_of_nan_is_a_metric_ragas_could_not_compute_and_stays_undefined(version, tmp_path):
    """Ragas writes NaN where a metric failed for a row (its documented "no value"): null, left out of the mean."""
    table = pd.DataFrame([RAGAS[0], {**RAGAS[1], "answer_relevancy": float("nan")}])
    table.to_csv(tmp_path / "ragas.csv", index=False)  # NaN as an empty cell
    write_jsonl(tmp_path / "ragas.jsonl", table.to_dict("records"))  # NaN as the JSON extension NaN
    assert "NaN" in (tmp_path / "ragas.jsonl").read_text()
    for name in ("ragas.csv", "ragas.jsonl"):
        run = run_import(path=tmp_path / name, evalset="support", name=name.replace(".", "-"), fmt="ragas", k=2).run
        assert Row.objects.get(run=run, question__qid="q2").scores.get("answer_relevancy") is None
        assert run.summary["slices"]["all"]["metrics"]["answer_relevancy"]["n"] == 1


def test_a_ragas_row_whose_question_text_is_unknown_is_refused(version, tmp_path):
    path = tmp_path / "ragas.parquet"
    pd.DataFrame([RAGAS[0], {**RAGAS[1], "user_input": "What is the meaning of life?"}]).to_parquet(path, index=False)
    refused(
        lambda: run_import(path=path, evalset="support", name="ragas", fmt="ragas", k=2),
        file="ragas.parquet",
        line=2,
        field="user_input",
        says="matches no question's text",
    )


def test_a_ragas_table_can_be_the_eval_set_itself(db, tmp_path):
    path = tmp_path / "ragas.parquet"
    pd.DataFrame(RAGAS).to_parquet(path, index=False)
    version = evalset_import(path=path, name="from-ragas", fmt="ragas").version
    questions = list(Question.objects.filter(version=version).order_by("text"))
    assert [q.text for q in questions] == ["What is the late fee?", "What is the refund window?"]
    assert questions[1].reference_answer == "30 days."
    assert all(q.qid.startswith("q-") for q in questions)
    run = run_import(path=path, evalset="from-ragas", name="ragas", fmt="ragas", k=2).run
    assert run.row_count == 2 and not run.is_partial


# ---------------------------------------------------------------------------------------------
# TREC qrels and runs, checked against trec_eval's own expected output
# ---------------------------------------------------------------------------------------------


def trec_expected() -> dict[str, dict[str, float]]:
    expected: dict[str, dict[str, float]] = defaultdict(dict)
    for line in (TREC / "out.test.aq").read_text().splitlines():
        if line.strip():
            measure, topic, value = line.split()
            try:
                expected[topic][measure] = float(value)
            except ValueError:
                pass
    return expected


@pytest.mark.skipif(not TREC.is_dir(), reason=f"trec_eval test data not found at {TREC}")
def test_trec_qrels_and_run_reproduce_trec_evals_per_topic_numbers(db):
    version = evalset_import(path=TREC / "qrels.test", name="trec").version  # the file name says qrels
    assert version.question_count == 3
    q301 = Question.objects.get(version=version, qid="301")
    assert q301.text == "TREC topic 301" and q301.answerable
    assert sum(1 for g in q301.gold if g["grade"] > 0) == 474  # num_rel in out.test.aq
    run = run_import(
        path=TREC / "results.test", evalset="trec", name="standard", fmt="trec-run", k=10, gain="linear"
    ).run
    assert run.row_count == 3
    expected = trec_expected()
    for topic in ("301", "302", "303"):
        row = Row.objects.get(run=run, question__qid=topic)
        assert len(row.retrieved) == 500
        assert row.metadata["trec_run_id"] == "STANDARD"
        want = expected[topic]
        assert row.scores["recall@10"] == pytest.approx(want["recall_10"], abs=5e-5), topic
        assert row.scores["precision@10"] == pytest.approx(want["P_10"], abs=5e-5), topic
        assert row.scores["rr"] == pytest.approx(want["recip_rank"], abs=5e-5), topic
        assert row.scores["ndcg@10"] == pytest.approx(want["ndcg_cut_10"], abs=5e-5), topic
    means = run.summary["slices"]["all"]["metrics"]
    for ours, theirs in (
        ("recall@10", "recall_10"),
        ("precision@10", "P_10"),
        ("rr", "recip_rank"),
        ("ndcg@10", "ndcg_cut_10"),
    ):
        assert means[ours]["mean"] == pytest.approx(expected["all"][theirs], abs=5e-5), ours
        assert means[ours]["n"] == 3


@pytest.mark.skipif(not TREC.is_dir(), reason=f"trec_eval test data not found at {TREC}")
def test_trec_ndcg_with_exponential_gain_equals_linear_gain_on_binary_qrels(db):
    evalset_import(path=TREC / "qrels.test", name="trec")
    linear = run_import(path=TREC / "results.test", evalset="trec", name="lin", fmt="trec-run", k=10, gain="linear").run
    exponential = run_import(path=TREC / "results.test", evalset="trec", name="exp", fmt="trec-run", k=10).run
    for topic in ("301", "302", "303"):
        a = Row.objects.get(run=linear, question__qid=topic).scores["ndcg@10"]
        b = Row.objects.get(run=exponential, question__qid=topic).scores["ndcg@10"]
        assert a == pytest.approx(b)


def test_a_trec_run_is_ranked_by_score_then_docno_descending_ignoring_the_rank_column(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text(
        "1 Q0 docA 1 0.5 sys\n1 Q0 docC 2 0.9 sys\n1 Q0 docB 3 0.5 sys\n1 Q0 docD 4 0.5 sys\n2 Q0 docZ 1 1.0 sys\n"
    )
    problems = ProblemCollector("run.txt")
    records = {r.data["id"]: r for r in read_trec_run(path, "run.txt", problems)}
    assert not problems
    assert records["1"].data["retrieved"] == ["docC", "docD", "docB", "docA"]
    assert records["2"].data["retrieved"] == ["docZ"]
    assert (records["1"].line, records["2"].line) == (1, 5)


def test_trec_topics_give_the_questions_their_text(db, tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("7 0 docA 1\n7 0 docB 0\n8 0 docC 0\n")
    topics = tmp_path / "topics.tsv"
    topics.write_text("7\tWhat is a chunk?\n8\tWho wrote the spec?\n")
    version = evalset_import(path=qrels, name="tiny", fmt="trec-qrels", topics_path=topics).version
    seven, eight = Question.objects.get(version=version, qid="7"), Question.objects.get(version=version, qid="8")
    assert seven.text == "What is a chunk?" and seven.answerable
    assert (
        eight.text == "Who wrote the spec?" and eight.answerable
    )  # only grade-0 judgments: judged, scores 0 (trec_eval)


def test_a_malformed_trec_run_line_is_refused_with_its_line_and_nothing_is_written(db, tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("7 0 docA 1\n")
    evalset_import(path=qrels, name="tiny", fmt="trec-qrels")
    run = tmp_path / "run.txt"
    run.write_text("7 Q0 docA 1 0.9 sys\n7 Q0 docB 2 high sys\n")
    refused(
        lambda: run_import(path=run, evalset="tiny", name="r", fmt="trec-run", k=10),
        file="run.txt",
        line=2,
        field="score",
        says="score must be a number",
    )


def test_a_malformed_qrels_line_is_refused_with_its_line_and_nothing_is_written(db, tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("7 0 docA 1\n7 0 docB relevant\n")
    refused(
        lambda: evalset_import(path=qrels, name="tiny", fmt="trec-qrels"),
        file="qrels.txt",
        line=2,
        field="grade",
        says="grade must be an integer",
    )


def test_a_qrels_file_is_refused_as_a_run_and_a_run_file_as_an_eval_set(db, tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("7 0 docA 1\n")
    with pytest.raises(ImportFailed, match="a TREC run file holds a run's rows"):
        evalset_import(path=qrels, name="tiny", fmt="trec-run")
    evalset_import(path=qrels, name="tiny", fmt="trec-qrels")
    with pytest.raises(ImportFailed, match="a qrels file holds gold judgments"):
        run_import(path=qrels, evalset="tiny", name="r", fmt="trec-qrels", k=1)


def test_a_ragas_list_cell_that_is_neither_json_nor_a_python_list_is_refused(version, tmp_path):
    path = tmp_path / "ragas.csv"
    pd.DataFrame([{**RAGAS[0], "retrieved_contexts": "['Refunds within 30 days.', 'Shipping"}]).to_csv(
        path, index=False
    )
    refused(
        lambda: run_import(path=path, evalset="support", name="ragas", fmt="ragas", k=2),
        file="ragas.csv",
        line=2,
        field="retrieved_contexts",
        says="holds malformed JSON",
    )


# ---------------------------------------------------------------------------------------------
# The documented examples work as documented
# ---------------------------------------------------------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs" / "formats.md"


def documented_json_blocks() -> list[dict]:
    import json
    import re

    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", DOCS.read_text(), flags=re.S)]


def test_the_documented_question_row_and_chunk_examples_import_as_documented(db, tmp_path):
    question, row, chunk = documented_json_blocks()
    version = evalset_import(path=write_jsonl(tmp_path / "questions.jsonl", [question]), name="docs").version
    stored = Question.objects.get(version=version)
    assert (stored.qid, stored.qtype, stored.tags) == ("q0001", "policy", ["contracts"])
    assert stored.gold == [{"doc": "doc017", "grade": 3, "start": 1200, "end": 1320}, {"doc": "doc004", "grade": 1}]
    chunks = write_jsonl(
        tmp_path / "chunks.jsonl",
        [chunk]
        + [
            {"id": cid, "doc": cid.split("-")[1] if "-" in cid else "other", "start": 0, "end": 256}
            for cid in set(row["retrieved"] + row["context_ids"]) - {chunk["id"]}
        ],
    )
    run = run_import(
        path=write_jsonl(tmp_path / "rows.jsonl", [row]), evalset="docs", name="docs-run", chunks_path=chunks
    ).run
    scored = Row.objects.get(run=run)
    assert run.k == 5 and scored.scores["answer_relevance"] == 4 and scored.scores["faithfulness"] == 1.0
    # c256-doc017-4 (1024-1280) overlaps the span 1200-1320; c256-doc004-2 is a chunk of the gold document doc004
    assert scored.scores["recall@5"] == 1.0 and scored.scores["rr"] == 1.0
    assert scored.context_chunks[0] == {"id": "c256-doc017-4", "text": "text of chunk 1"}


def test_the_documented_problem_message_is_the_one_an_import_gives(db, tmp_path):
    example = next(line for line in DOCS.read_text().splitlines() if line.startswith("questions.jsonl, line 12"))
    questions = [{"id": f"q{i}", "question": f"Q{i}?"} for i in range(1, 12)] + [
        {"id": "q12", "question": "Q12?", "gold": [{"doc": "d", "grade": "high"}]}
    ]
    with pytest.raises(ImportFailed) as excinfo:
        evalset_import(path=write_jsonl(tmp_path / "questions.jsonl", questions), name="docs")
    assert str(excinfo.value.problems[0]) == example
