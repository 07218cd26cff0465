"""Bad input: every import rule refuses the file with FILE, line N, field 'F' and writes nothing.

Each test counts the rows of every evalcore table before and after the refused import.
"""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evalcore.models import Run
from evalcore.services.evalsets import evalset_import
from evalcore.services.problems import ImportFailed
from evalcore.services.runs import run_import
from tests.factories import JUDGE, QUESTIONS, ok_row, ok_rows
from tests.files import write_jsonl

from .conftest import db_counts, refused, write_csv

pytestmark = pytest.mark.django_db


def import_questions(path, **kwargs):
    return lambda: evalset_import(path=path, name=kwargs.pop("name", "support"), **kwargs)


def import_rows(path, **kwargs):
    kwargs.setdefault("k", 3)
    return lambda: run_import(
        path=path, evalset=kwargs.pop("evalset", "support"), name=kwargs.pop("name", "cand"), **kwargs
    )


# ---------------------------------------------------------------------------------------------
# Questions
# ---------------------------------------------------------------------------------------------


def test_malformed_json_in_a_questions_file_names_the_file_and_line(db, tmp_path):
    path = write_jsonl(tmp_path / "qs.jsonl", [QUESTIONS[0], QUESTIONS[1], '{"id": "q3", "question": "Why?"'])
    refused(import_questions(path), file="qs.jsonl", line=3, says="malformed JSON")


def test_a_line_that_is_not_an_object_is_refused_with_its_line(db, tmp_path):
    path = write_jsonl(tmp_path / "qs.jsonl", [QUESTIONS[0], "[1, 2]"])
    refused(import_questions(path), file="qs.jsonl", line=2, says="JSON object")


def test_duplicate_question_ids_are_refused_naming_both_lines(db, tmp_path):
    path = write_jsonl(tmp_path / "qs.jsonl", [QUESTIONS[0], QUESTIONS[1], {**QUESTIONS[2], "id": "q1"}])
    message = refused(import_questions(path), file="qs.jsonl", line=3, field="id", says="used twice")
    assert "first on line 1" in message


def test_a_text_grade_is_refused_as_a_wrong_type(db, tmp_path):
    bad = {**QUESTIONS[0], "gold": [{"doc": "d1", "grade": 3}, {"doc": "d2", "grade": "high"}]}
    path = write_jsonl(tmp_path / "qs.jsonl", [bad])
    refused(import_questions(path), file="qs.jsonl", line=1, field="gold[1].grade", says="must be a number")


def test_a_nan_grade_is_refused_not_stored_as_relevant(db, tmp_path):
    bad = {**QUESTIONS[0], "gold": [{"doc": "d1", "grade": 3}, {"doc": "d2", "grade": float("nan")}]}
    path = write_jsonl(tmp_path / "qs.jsonl", [QUESTIONS[1], bad])  # json.dumps writes NaN, which JSON readers accept
    assert "NaN" in path.read_text()
    refused(import_questions(path), file="qs.jsonl", line=2, field="gold[1].grade", says="is NaN")


def test_a_nan_score_is_refused_where_the_format_documents_null_for_no_value(version, tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [ok_row("q1"), ok_row("q2", scores={"answer_relevance": float("nan")})])
    refused(
        import_rows(path), file="rows.jsonl", line=2, field="scores.answer_relevance", says="give a number, or null"
    )


def test_a_text_answerable_flag_is_refused_as_a_wrong_type(db, tmp_path):
    path = write_jsonl(tmp_path / "qs.jsonl", [QUESTIONS[0], {**QUESTIONS[1], "answerable": "sometimes"}])
    refused(import_questions(path), file="qs.jsonl", line=2, field="answerable", says="true or false")


def test_gold_that_is_not_a_list_is_refused(db, tmp_path):
    path = write_jsonl(tmp_path / "qs.jsonl", [{**QUESTIONS[0], "gold": "d1"}])
    refused(import_questions(path), file="qs.jsonl", line=1, field="gold", says="must be a list")


def test_a_span_with_only_a_start_is_refused(db, tmp_path):
    bad = {**QUESTIONS[4], "gold": [{"doc": "d5", "grade": 2, "start": 100}]}
    path = write_jsonl(tmp_path / "qs.jsonl", [QUESTIONS[0], bad])
    refused(import_questions(path), file="qs.jsonl", line=2, field="gold[0]", says="both start and end")


def test_a_span_that_ends_before_it_starts_is_refused(db, tmp_path):
    bad = {**QUESTIONS[4], "gold": [{"doc": "d5", "grade": 2, "start": 180, "end": 100}]}
    path = write_jsonl(tmp_path / "qs.jsonl", [bad])
    refused(import_questions(path), file="qs.jsonl", line=1, field="gold[0]", says="start < end")


def test_an_unanswerable_question_with_relevant_gold_is_refused(db, tmp_path):
    bad = {**QUESTIONS[3], "gold": [{"doc": "d9", "grade": 1}]}
    path = write_jsonl(tmp_path / "qs.jsonl", [QUESTIONS[0], bad])
    refused(import_questions(path), file="qs.jsonl", line=2, field="answerable", says="relevant documents")


def test_a_question_without_text_is_refused(db, tmp_path):
    path = write_jsonl(tmp_path / "qs.jsonl", [{**QUESTIONS[0], "question": ""}])
    refused(import_questions(path), file="qs.jsonl", line=1, field="question", says="required")


def test_a_question_without_an_id_is_refused(db, tmp_path):
    record = {k: v for k, v in QUESTIONS[0].items() if k != "id"}
    path = write_jsonl(tmp_path / "qs.jsonl", [record])
    refused(import_questions(path), file="qs.jsonl", line=1, field="id", says="required")


def test_every_problem_in_a_file_is_reported_at_once(db, tmp_path):
    path = write_jsonl(
        tmp_path / "qs.jsonl",
        [
            {**QUESTIONS[0], "answerable": "maybe"},
            QUESTIONS[1],
            {**QUESTIONS[2], "gold": [{"doc": "d4", "grade": "high"}]},
        ],
    )
    with pytest.raises(ImportFailed) as excinfo:
        evalset_import(path=path, name="support")
    assert [(p.line, p.field) for p in excinfo.value.problems] == [(1, "answerable"), (3, "gold[0].grade")]


def test_an_empty_questions_file_is_refused(db, tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    refused(import_questions(path), file="empty.jsonl", says="no questions")


def test_an_unknown_format_is_refused_naming_the_formats_there_are(db, questions_file):
    message = refused(import_questions(questions_file, fmt="xml"), file="questions.jsonl", says="unknown format 'xml'")
    assert "jsonl" in message and "parquet" in message


def test_a_file_whose_extension_and_content_name_no_format_is_refused(db, tmp_path):
    path = tmp_path / "questions.txt"
    path.write_text("id;question\nq1;What?\n")
    refused(import_questions(path), file="questions.txt", says="cannot tell the format")


def test_a_file_whose_extension_names_no_format_is_read_by_its_content(db, tmp_path):
    path = tmp_path / "questions.txt"
    path.write_text(json.dumps(QUESTIONS[0]) + "\n")
    assert import_questions(path)().version.question_count == 1


def test_a_csv_cell_with_malformed_json_is_refused_with_its_line_and_column_name(db, tmp_path):
    path = write_csv(
        tmp_path / "qs.csv",
        ["id", "question", "type", "gold"],
        [
            ["q1", "What is the refund window?", "policy", [{"doc": "d1", "grade": 3}]],
            ["q2", "What is the late fee?", "billing", '[{"doc": "d3", "grade": 2'],
        ],
    )
    refused(import_questions(path), file="qs.csv", line=3, field="gold", says="malformed JSON")


def test_an_eval_set_name_that_is_not_a_slug_is_refused(db, questions_file):
    refused(import_questions(questions_file, name="support qa!"), file="questions.jsonl", says="letters, digits")


def test_the_display_name_of_an_upload_is_the_file_named_in_problems(db, tmp_path):
    path = write_jsonl(tmp_path / "4f2a-upload.jsonl", [{**QUESTIONS[0], "answerable": "maybe"}])
    refused(
        import_questions(path, display_name="my questions.jsonl"), file="my questions.jsonl", line=1, field="answerable"
    )


# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------


def test_malformed_json_in_a_rows_file_names_the_file_and_line(version, tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [ok_row("q1"), ok_row("q2"), '{"id": "q3", "retrieved": ["d1",'])
    refused(import_rows(path), file="rows.jsonl", line=3, says="malformed JSON")


def test_a_row_for_a_question_not_in_the_version_is_refused(version, tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [ok_row("q1"), ok_row("q99")])
    refused(import_rows(path), file="rows.jsonl", line=2, field="id", says="'q99' is not in support v1")


def test_two_rows_for_one_question_are_refused_naming_the_first(version, tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [ok_row("q1"), ok_row("q2"), ok_row("q1")])
    message = refused(import_rows(path), file="rows.jsonl", line=3, field="id", says="second row")
    assert "first on line 1" in message


def test_declined_maybe_is_refused_as_a_wrong_type(version, tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [ok_row("q1", declined="maybe")])
    refused(import_rows(path), file="rows.jsonl", line=1, field="declined", says="true or false")


def test_claims_that_are_not_a_list_are_refused(version, tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [ok_row("q1"), ok_row("q2", claims={"text": "A.", "supported": True})])
    refused(import_rows(path), file="rows.jsonl", line=2, field="claims", says="must be a list")


def test_a_claim_without_a_verdict_is_refused(version, tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [ok_row("q1", claims=[{"text": "A."}])])
    refused(import_rows(path), file="rows.jsonl", line=1, field="claims[0].supported", says="required")


def test_a_text_score_is_refused_as_a_wrong_type(version, tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [ok_row("q1", scores={"answer_relevance": "high"})])
    refused(import_rows(path), file="rows.jsonl", line=1, field="scores.answer_relevance", says="must be a number")


def test_retrieved_ids_that_are_not_ids_are_refused(version, tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [ok_row("q1", retrieved=["d1", {"doc": "d2"}])])
    refused(import_rows(path), file="rows.jsonl", line=1, field="retrieved[1]", says="non-empty id")


def test_a_k_that_is_not_a_whole_number_is_refused(version, rows_file):
    refused(import_rows(rows_file, k=2.5), file="rows.jsonl", says="k must be a positive integer")
    refused(import_rows(rows_file, k="five"), file="rows.jsonl", says="k must be a positive integer")
    refused(import_rows(rows_file, k=0), file="rows.jsonl", says="k must be a positive integer")


def test_the_import_run_command_refuses_a_k_that_is_not_an_integer(version, rows_file):
    before = db_counts()
    with pytest.raises(CommandError, match="--k: invalid int value"):
        call_command("import_run", str(rows_file), "--evalset", "support", "--name", "cand", "--k", "five", "--quiet")
    assert db_counts() == before


def test_a_row_whose_context_ids_exceed_k_is_refused(version, tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [ok_row("q1"), ok_row("q2", context_ids=["d1", "d9", "d3", "d4"])])
    refused(import_rows(path, k=3), file="rows.jsonl", line=2, field="context_ids", says="run's k is 3")


def test_a_chunk_id_missing_from_the_chunk_map_is_refused(version, tmp_path):
    chunks = write_jsonl(
        tmp_path / "chunks.jsonl",
        [
            {"id": "c1", "doc": "d1", "start": 0, "end": 100},
            {"id": "c2", "doc": "d1", "start": 100, "end": 200},
        ],
    )
    path = write_jsonl(
        tmp_path / "rows.jsonl",
        [
            ok_row("q1", retrieved=["c1", "c2"], context_ids=["c1"]),
            ok_row("q2", retrieved=["c2", "c7"], context_ids=["c2"]),
        ],
    )
    refused(
        import_rows(path, chunks_path=chunks),
        file="rows.jsonl",
        line=2,
        field="retrieved",
        says="'c7' is not in the chunk map",
    )


def test_a_chunk_map_with_a_non_integer_offset_is_refused_with_its_line(version, tmp_path, rows_file):
    chunks = write_jsonl(
        tmp_path / "chunks.jsonl",
        [
            {"id": "c1", "doc": "d1", "start": 0, "end": 100},
            {"id": "c2", "doc": "d1", "start": "one hundred", "end": 200},
        ],
    )
    refused(
        import_rows(rows_file, chunks_path=chunks), file="chunks.jsonl", line=2, field="start", says="must be a number"
    )


def test_an_empty_rows_file_is_refused(version, tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("\n\n")
    refused(import_rows(path), file="rows.jsonl", says="no rows")


def test_an_unknown_run_format_is_refused(version, rows_file):
    refused(import_rows(rows_file, fmt="excel"), file="rows.jsonl", says="unknown format 'excel'")


def test_a_run_for_an_eval_set_that_does_not_exist_is_refused(version, rows_file):
    refused(import_rows(rows_file, evalset="nope"), file="rows.jsonl", says="there is no eval set 'nope'")
    refused(import_rows(rows_file, evalset="support@7"), file="rows.jsonl", says="there is no eval set 'support@7'")


def test_a_run_name_reused_with_different_content_is_refused(run, tmp_path):
    changed = ok_rows()
    changed[0]["claims"] = []
    path = write_jsonl(tmp_path / "rows-v2.jsonl", changed)
    message = refused(import_rows(path, name="base", judge_config=JUDGE), file="rows-v2.jsonl", says="already exists")
    assert "choose another name" in message
    assert Run.objects.get(name="base").rows.get(question__qid="q1").claims != []


def test_a_run_name_reused_with_another_k_is_refused(run, rows_file):
    refused(import_rows(rows_file, name="base", k=4, judge_config=JUDGE), file="rows.jsonl", says="already exists")


def test_a_csv_rows_cell_with_malformed_json_is_refused_with_its_line_and_column(version, tmp_path):
    path = write_csv(
        tmp_path / "rows.csv",
        ["id", "retrieved", "context_ids", "answer", "claims"],
        [
            ["q1", ["d1", "d2"], ["d1"], "An answer.", [{"text": "A.", "supported": True}]],
            ["q2", ["d3"], ["d3"], "An answer.", '[{"text": "A.", "supported": tru'],
        ],
    )
    refused(import_rows(path), file="rows.csv", line=3, field="claims", says="malformed JSON")


def test_a_judge_config_without_a_model_is_refused(version, rows_file):
    refused(import_rows(rows_file, judge_config={"prompt": "x"}), file="judge config", field="model", says="required")


def test_one_bad_row_among_many_valid_ones_writes_nothing(version, tmp_path):
    rows = [ok_row(q["id"]) for q in QUESTIONS]
    rows[-1]["declined"] = "perhaps"
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    refused(import_rows(path), file="rows.jsonl", line=5, field="declined")


def test_the_import_run_command_shows_the_problems_and_writes_nothing(version, tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [ok_row("q1"), ok_row("nope")])
    before = db_counts()
    with pytest.raises(CommandError) as excinfo:
        call_command("import_run", str(path), "--evalset", "support", "--name", "cand", "--k", "3", "--quiet")
    assert "rows.jsonl, line 2, field 'id': question 'nope' is not in support v1" in str(excinfo.value)
    assert db_counts() == before


def test_the_import_evalset_command_shows_the_problems_and_writes_nothing(db, tmp_path):
    path = write_jsonl(tmp_path / "qs.jsonl", [QUESTIONS[0], QUESTIONS[0]])
    before = db_counts()
    with pytest.raises(CommandError) as excinfo:
        call_command("import_evalset", str(path), "--name", "support", "--quiet")
    assert "qs.jsonl, line 2, field 'id'" in str(excinfo.value)
    assert db_counts() == before


# ---------------------------------------------------------------------------------------------
# All or nothing, even when something fails halfway through writing
# ---------------------------------------------------------------------------------------------


def test_a_failure_halfway_through_writing_questions_leaves_nothing_behind(db, tmp_path, monkeypatch):
    import evalcore.services.evalsets as evalsets_service

    questions = [{"id": f"q{i}", "question": f"Question {i}?", "gold": [{"doc": f"d{i}"}]} for i in range(4500)]
    path = write_jsonl(tmp_path / "big.jsonl", questions)
    original = evalsets_service.insert_values
    calls = []

    def failing(model, fields, values):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        return original(model, fields, values)

    monkeypatch.setattr(evalsets_service, "insert_values", failing)
    before = db_counts()
    with pytest.raises(RuntimeError, match="disk full"):
        evalset_import(path=path, name="big")
    assert len(calls) == 2
    assert db_counts() == before


def test_a_failure_halfway_through_writing_rows_leaves_nothing_behind(db, tmp_path, monkeypatch):
    import evalcore.services.run_store as runs_service

    questions = [{"id": f"q{i}", "question": f"Question {i}?", "gold": [{"doc": f"d{i}"}]} for i in range(4500)]
    evalset_import(path=write_jsonl(tmp_path / "qs.jsonl", questions), name="big")
    rows = [{"id": f"q{i}", "retrieved": [f"d{i}", "x"], "context_ids": [f"d{i}"]} for i in range(4500)]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    original = runs_service.score_rows
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("scorer crashed")
        return original(*args, **kwargs)

    monkeypatch.setattr(runs_service, "score_rows", failing)
    before = db_counts()
    with pytest.raises(RuntimeError, match="scorer crashed"):
        run_import(path=path, evalset="big", name="r1", k=1, judge_config=JUDGE)
    assert len(calls) == 2
    assert db_counts() == before
