"""Imports are idempotent: the same file twice creates nothing and says so; a change makes a new version."""

from __future__ import annotations

import random

import pytest
from django.core.management import call_command

from evalcore.models import EvalSetVersion, Question, Row, Run
from evalcore.services.evalsets import evalset_import
from evalcore.services.problems import ImportFailed
from evalcore.services.runs import run_import
from tests.factories import JUDGE, QUESTIONS, ok_row, ok_rows
from tests.files import write_jsonl

from .conftest import db_counts

pytestmark = pytest.mark.django_db


def test_importing_the_same_questions_twice_creates_nothing_and_says_so(questions_file):
    first = evalset_import(path=questions_file, name="support")
    assert first.created and first.message == "Created support v1 with 5 questions."
    before = db_counts()
    second = evalset_import(path=questions_file, name="support")
    assert not second.created
    assert second.message.startswith("Nothing new: support v1 already holds exactly these 5 questions")
    assert second.version.pk == first.version.pk
    assert db_counts() == before


def test_the_import_evalset_command_prints_the_version_and_says_nothing_new_the_second_time(db, questions_file, capsys):
    call_command("import_evalset", str(questions_file), "--name", "support", "--quiet")
    out = capsys.readouterr().out
    assert "Created support v1 with 5 questions." in out and "version: support@1" in out
    before = db_counts()
    call_command("import_evalset", str(questions_file), "--name", "support", "--quiet")
    out = capsys.readouterr().out
    assert "Nothing new" in out and "version: support@1" in out
    assert db_counts() == before


def test_importing_the_same_run_file_twice_creates_nothing_and_says_so(version, rows_file):
    first = run_import(path=rows_file, evalset="support", name="base", k=3, judge_config=JUDGE)
    assert first.created
    before = db_counts()
    second = run_import(path=rows_file, evalset="support", name="base", k=3, judge_config=JUDGE)
    assert not second.created
    assert second.message.startswith(
        "Nothing new: run 'base' on support v1 was already imported from this file (5 rows)"
    )
    assert second.run.pk == first.run.pk
    assert db_counts() == before


def test_the_import_run_command_says_nothing_new_the_second_time(version, rows_file, capsys):
    args = [str(rows_file), "--evalset", "support@1", "--name", "base", "--k", "3", "--quiet"]
    call_command("import_run", *args)
    assert "Created run 'base' on support v1: 5 of 5 questions, k=3." in capsys.readouterr().out
    before = db_counts()
    call_command("import_run", *args)
    assert "Nothing new" in capsys.readouterr().out
    assert db_counts() == before


def test_the_same_rows_under_a_new_name_make_a_second_run(run, rows_file):
    other = run_import(path=rows_file, evalset="support", name="again", k=3, judge_config=JUDGE)
    assert other.created and other.run.pk != run.pk
    assert Row.objects.filter(run=other.run).count() == 5


def test_runs_with_the_same_judge_share_one_pinned_judge_config(run, rows_file):
    other = run_import(path=rows_file, evalset="support", name="again", k=3, judge_config=dict(reversed(JUDGE.items())))
    assert other.run.judge_config_id == run.judge_config_id
    changed = run_import(
        path=rows_file, evalset="support", name="new-judge", k=3, judge_config={**JUDGE, "temperature": 0.7}
    )
    assert changed.run.judge_config_id != run.judge_config_id


def test_a_changed_questions_file_makes_v2_with_parent_v1_and_a_new_hash(version, tmp_path):
    changed = [dict(q) for q in QUESTIONS]
    changed[1]["gold"] = [{"doc": "d3", "grade": 3}]
    result = evalset_import(path=write_jsonl(tmp_path / "qs2.jsonl", changed), name="support")
    assert result.created
    v2 = result.version
    assert (v2.number, v2.parent_id, v2.sealed) == (2, version.pk, True)
    assert v2.content_hash != version.content_hash
    assert result.message == "Created support v2 with 5 questions, derived from v1."
    # v1 is untouched
    assert Question.objects.get(version=version, qid="q2").gold == [{"doc": "d3", "grade": 2}]
    assert Question.objects.get(version=v2, qid="q2").gold == [{"doc": "d3", "grade": 3}]


def test_reimporting_v1_content_after_v2_says_v1_already_holds_it(version, tmp_path, questions_file):
    evalset_import(path=write_jsonl(tmp_path / "qs2.jsonl", QUESTIONS[:4]), name="support")
    before = db_counts()
    again = evalset_import(path=questions_file, name="support")
    assert not again.created and again.version.pk == version.pk
    assert db_counts() == before


def test_the_order_of_questions_in_the_file_does_not_change_the_content_hash(db, tmp_path):
    shuffled = list(QUESTIONS)
    random.Random(3).shuffle(shuffled)
    assert [q["id"] for q in shuffled] != [q["id"] for q in QUESTIONS]
    a = evalset_import(path=write_jsonl(tmp_path / "a.jsonl", QUESTIONS), name="set-a").version
    b = evalset_import(path=write_jsonl(tmp_path / "b.jsonl", shuffled), name="set-b").version
    assert a.content_hash == b.content_hash
    before = db_counts()
    same = evalset_import(path=tmp_path / "b.jsonl", name="set-a")
    assert not same.created and same.version.pk == a.pk
    assert db_counts() == before


def test_key_order_in_each_line_does_not_change_the_content_hash(db, tmp_path):
    reordered = [dict(reversed(list(q.items()))) for q in QUESTIONS]
    a = evalset_import(path=write_jsonl(tmp_path / "a.jsonl", QUESTIONS), name="set-a").version
    b = evalset_import(path=write_jsonl(tmp_path / "b.jsonl", reordered), name="set-b").version
    assert a.content_hash == b.content_hash


def test_a_one_character_change_in_a_question_changes_the_content_hash(db, tmp_path):
    changed = [dict(q) for q in QUESTIONS]
    changed[0]["question"] = "What is the refund window ?"
    a = evalset_import(path=write_jsonl(tmp_path / "a.jsonl", QUESTIONS), name="set-a").version
    b = evalset_import(path=write_jsonl(tmp_path / "b.jsonl", changed), name="set-b").version
    assert a.content_hash != b.content_hash


def test_extend_mode_adds_questions_on_top_of_the_base_version(version, tmp_path):
    extra = [
        {"id": "q6", "question": "What is the TLS version?", "type": "technical", "gold": [{"doc": "d6", "grade": 1}]}
    ]
    result = evalset_import(
        path=write_jsonl(tmp_path / "more.jsonl", [QUESTIONS[0], *extra]), name="support", mode="extend"
    )
    v2 = result.version
    assert result.created and v2.number == 2 and v2.parent_id == version.pk and v2.sealed
    assert v2.question_count == 6
    assert sorted(v2.questions.values_list("qid", flat=True)) == ["q1", "q2", "q3", "q4", "q5", "q6"]
    assert version.questions.count() == 5
    old = Question.objects.get(version=version, qid="q5")
    copied = Question.objects.get(version=v2, qid="q5")
    assert (copied.text, copied.gold, copied.answerable) == (old.text, old.gold, old.answerable)
    # the same extension again is nothing new
    before = db_counts()
    again = evalset_import(
        path=write_jsonl(tmp_path / "more2.jsonl", extra), name="support", mode="extend", base_version=1
    )
    assert not again.created and again.version.pk == v2.pk
    assert db_counts() == before


def test_extend_mode_gives_the_same_hash_as_importing_the_whole_set(version, tmp_path):
    extra = {
        "id": "q6",
        "question": "What is the TLS version?",
        "type": "technical",
        "gold": [{"doc": "d6", "grade": 1}],
    }
    extended = evalset_import(path=write_jsonl(tmp_path / "more.jsonl", [extra]), name="support", mode="extend").version
    whole = evalset_import(path=write_jsonl(tmp_path / "all.jsonl", [*QUESTIONS, extra]), name="other").version
    assert extended.content_hash == whole.content_hash


def test_extend_mode_refuses_a_changed_question_under_an_existing_id(version, tmp_path):
    changed = {**QUESTIONS[1], "gold": [{"doc": "d3", "grade": 1}]}
    extra = {"id": "q6", "question": "What is the TLS version?", "gold": [{"doc": "d6"}]}
    path = write_jsonl(tmp_path / "more.jsonl", [extra, changed])
    before = db_counts()
    with pytest.raises(ImportFailed) as excinfo:
        evalset_import(path=path, name="support", mode="extend")
    assert "more.jsonl, line 2, field 'id': question 'q2' exists in support@1 with different content" in str(
        excinfo.value
    )
    assert "give the changed question a new id" in str(excinfo.value)
    assert db_counts() == before


def test_extend_mode_with_only_known_questions_creates_nothing_and_says_so(version, tmp_path):
    path = write_jsonl(tmp_path / "same.jsonl", QUESTIONS[:2])
    before = db_counts()
    result = evalset_import(path=path, name="support", mode="extend")
    assert not result.created and result.version.pk == version.pk
    assert result.message.startswith("Nothing new: support v1")
    assert db_counts() == before


def test_extend_mode_needs_an_existing_eval_set(db, questions_file):
    with pytest.raises(ImportFailed, match="no version to extend"):
        evalset_import(path=questions_file, name="fresh", mode="extend")
    assert EvalSetVersion.objects.count() == 0


def test_the_import_evalset_command_extends_a_chosen_base_version(version, tmp_path, capsys):
    evalset_import(path=write_jsonl(tmp_path / "v2.jsonl", QUESTIONS[:2]), name="support")
    extra = write_jsonl(tmp_path / "extra.jsonl", [{"id": "q6", "question": "New?", "gold": [{"doc": "d6"}]}])
    call_command("import_evalset", str(extra), "--name", "support", "--extend", "--base", "1", "--quiet")
    assert "Created support v3 with 6 questions, derived from v1." in capsys.readouterr().out
    v3 = EvalSetVersion.objects.get(eval_set__name="support", number=3)
    assert v3.parent.number == 1


def test_a_run_on_an_older_version_is_kept_when_a_new_version_arrives(run, tmp_path):
    evalset_import(path=write_jsonl(tmp_path / "qs2.jsonl", QUESTIONS[:3]), name="support")
    assert Run.objects.get(pk=run.pk).version.number == 1
    newer = run_import(path=write_jsonl(tmp_path / "r.jsonl", [ok_row("q1")]), evalset="support", name="base", k=3)
    assert newer.created and newer.run.version.number == 2
    assert Run.objects.filter(name="base").count() == 2


def test_a_run_file_changed_after_import_is_not_taken_for_the_same_run(run, tmp_path, rows_file):
    rows = ok_rows()
    rows[0]["answer"] = "A different answer."
    rows_file.write_text("".join(__import__("json").dumps(r) + "\n" for r in rows))
    with pytest.raises(ImportFailed, match="already exists"):
        run_import(path=rows_file, evalset="support", name="base", k=3, judge_config=JUDGE)
