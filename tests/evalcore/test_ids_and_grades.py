"""Ids are compared after Unicode NFC normalisation; ids that differ only by case are refused naming
both lines; gold grades are 0 or more. In eval-set imports, run imports and qrels (TREC and BEIR)."""

from __future__ import annotations

import unicodedata

import pytest

from evalcore.models import Question, Row
from evalcore.services.evalsets import evalset_import
from evalcore.services.runs import run_import
from tests.factories import JUDGE, QUESTIONS, ok_row, ok_rows
from tests.files import write_jsonl

from .conftest import refused

pytestmark = pytest.mark.django_db

CAFE_NFC = unicodedata.normalize("NFC", "café")
CAFE_NFD = unicodedata.normalize("NFD", "café")


def test_the_two_spellings_of_cafe_are_different_strings():
    assert CAFE_NFC != CAFE_NFD and unicodedata.normalize("NFC", CAFE_NFD) == CAFE_NFC


def test_a_question_id_is_stored_in_nfc(tmp_path):
    path = write_jsonl(tmp_path / "q.jsonl", [{"id": CAFE_NFD, "question": "Q?", "gold": [{"doc": f"doc-{CAFE_NFD}"}]}])
    version = evalset_import(path=path, name="unicode").version
    question = Question.objects.get(version=version)
    assert question.qid == CAFE_NFC and question.gold[0]["doc"] == f"doc-{CAFE_NFC}"


def test_ids_that_differ_only_by_normalisation_are_one_id_used_twice(tmp_path):
    path = write_jsonl(
        tmp_path / "q.jsonl", [{"id": CAFE_NFC, "question": "First?"}, {"id": CAFE_NFD, "question": "Second?"}]
    )
    refused(lambda: evalset_import(path=path, name="unicode"), file="q.jsonl", line=2, field="id", says="used twice")


def test_ids_that_differ_only_by_case_are_refused_naming_both_lines(tmp_path):
    path = write_jsonl(
        tmp_path / "q.jsonl",
        [{"id": "Q1", "question": "Upper?"}, {"id": "q2", "question": "Other?"}, {"id": "q1", "question": "Lower?"}],
    )
    message = refused(
        lambda: evalset_import(path=path, name="cases"), file="q.jsonl", line=3, field="id", says="only by case"
    )
    assert "'q1' on line 3 differs only by case from 'Q1' on line 1" in message


def test_a_negative_gold_grade_is_refused_naming_file_line_and_field(tmp_path):
    questions = [dict(q) for q in QUESTIONS]
    questions[1] = {**questions[1], "gold": [{"doc": "d1", "grade": 2}, {"doc": "d4", "grade": -3}]}
    path = write_jsonl(tmp_path / "q.jsonl", questions)
    refused(
        lambda: evalset_import(path=path, name="grades"),
        file="q.jsonl",
        line=2,
        field="gold[1].grade",
        says="is -3; a grade is 0",
    )


def test_a_grade_of_zero_is_a_judged_not_relevant_document(tmp_path):
    path = write_jsonl(tmp_path / "q.jsonl", [{"id": "q1", "question": "Q?", "gold": [{"doc": "d1", "grade": 0}]}])
    assert Question.objects.get(version=evalset_import(path=path, name="zero").version).gold == [
        {"doc": "d1", "grade": 0}
    ]


def test_trec_qrels_refuse_a_negative_grade_on_its_line(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1\nq1 0 d2 -3\nq2 0 d1 2\n")
    refused(lambda: evalset_import(path=path, name="trec"), file="qrels.txt", line=2, field="grade", says="0 (judged")


def test_trec_qrels_compare_ids_in_nfc(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text(f"{CAFE_NFC} 0 d1 1\n{CAFE_NFD} 0 d2 1\nq2 0 {CAFE_NFC} 1\nq2 0 {CAFE_NFD} 2\n")
    refused(
        lambda: evalset_import(path=path, name="trec"), file="qrels.txt", line=4, field="docno", says="judged twice"
    )
    path.write_text(f"{CAFE_NFC} 0 d1 1\n{CAFE_NFD} 0 d2 1\n")
    version = evalset_import(path=path, name="trec").version
    assert [(q.qid, [g["doc"] for g in q.gold]) for q in Question.objects.filter(version=version)] == [
        (CAFE_NFC, ["d1", "d2"])
    ]


def test_beir_qrels_refuse_a_negative_score(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t-1\n")
    refused(lambda: evalset_import(path=path, name="beir"), file="test.tsv", line=3, field="score", says="0 (judged")


def test_a_run_row_matches_its_question_whatever_the_normalisation(tmp_path):
    evalset_import(
        path=write_jsonl(tmp_path / "q.jsonl", [{"id": CAFE_NFC, "question": "Q?", "gold": ["d1"]}]), name="u"
    )
    rows = write_jsonl(tmp_path / "rows.jsonl", [ok_row(CAFE_NFD, retrieved=["d1"], context_ids=["d1"])])
    run = run_import(path=rows, evalset="u", name="nfd", k=1, judge_config=JUDGE).run
    row = Row.objects.get(run=run)
    assert row.question.qid == CAFE_NFC and row.scores["recall@1"] == 1.0


def test_a_run_row_whose_id_differs_only_by_case_from_a_question_is_refused_with_the_question_named(version, tmp_path):
    rows = ok_rows() + [ok_row("Q1")]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    message = refused(
        lambda: run_import(path=path, evalset="support", name="cases", k=3, judge_config=JUDGE),
        file="rows.jsonl",
        line=len(rows),
        field="id",
        says="is not in support v1 (it holds 'q1': ids differ by case)",
    )
    assert "rows must answer" in message


def test_extending_a_version_refuses_an_id_that_differs_only_by_case_from_one_of_its_questions(version, tmp_path):
    path = write_jsonl(tmp_path / "more.jsonl", [{"id": "q6", "question": "New?"}, {"id": "Q1", "question": "Again?"}])
    refused(
        lambda: evalset_import(path=path, name="support", mode="extend"),
        file="more.jsonl",
        line=2,
        field="id",
        says="'Q1' differs only by case from question 'q1' of support@1",
    )
