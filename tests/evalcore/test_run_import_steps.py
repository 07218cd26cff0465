"""``run_import`` in three steps, each tested on its own: read (the plan), check (the first pass), write."""

from __future__ import annotations

import dataclasses

import pytest
from django.db import transaction

from evalcore.models import Row, Run
from evalcore.services.problems import ImportFailed
from evalcore.services.run_options import run_import_plan
from evalcore.services.runs import run_import, run_import_check, run_import_write
from tests.factories import JUDGE, QUESTIONS, ok_row, ok_rows
from tests.files import write_jsonl

from .conftest import db_counts

pytestmark = pytest.mark.django_db


def test_the_plan_is_frozen_and_reads_the_options_the_version_and_the_judge(version, rows_file):
    plan = run_import_plan(path=rows_file, evalset="support", name="base", judge_config=JUDGE, system_config={"a": 1})
    assert (plan.name, plan.fmt, plan.display, plan.version.pk) == ("base", "jsonl", "rows.jsonl", version.pk)
    assert plan.options.k is None and plan.options.gain == "exponential" and plan.system == {"a": 1}
    assert plan.judge is not None and len(plan.judge["config_hash"]) == 64
    assert plan.chunk_map is None and plan.chunk_rows == []
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.name = "other"  # type: ignore[misc]


def test_the_source_hash_changes_with_an_option_that_changes_what_is_stored_and_with_the_file(
    version, rows_file, tmp_path
):
    def source_hash(path=rows_file, **options):
        return run_import_plan(path=path, evalset="support", name="base", **options).source_hash

    same = source_hash(k=3)
    assert source_hash(k=3) == same
    assert source_hash(k=4) != same
    assert source_hash(k=3, gain="linear") != same
    other = write_jsonl(tmp_path / "rows.jsonl", [*ok_rows()[:-1], ok_row(QUESTIONS[-1]["id"], answer="Other.")])
    assert source_hash(path=other, k=3) != same


def test_the_plan_refuses_an_unknown_eval_set_naming_the_file_and_writes_nothing(db, rows_file):
    before = db_counts()
    with pytest.raises(ImportFailed) as excinfo:
        run_import_plan(path=rows_file, evalset="nope", name="base")
    assert excinfo.value.problems[0].file == "rows.jsonl"
    assert db_counts() == before


def test_without_k_the_check_reads_every_row_and_finds_k_from_the_widest_context(version, tmp_path):
    rows = [ok_row(q["id"]) for q in QUESTIONS]
    rows[2] = ok_row(QUESTIONS[2]["id"], context_ids=["d1", "d9", "d3", "d4"])
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    checked = run_import_check(run_import_plan(path=path, evalset="support", name="base"))
    assert (checked.k, checked.count, checked.single_pass) == (4, len(QUESTIONS), False)
    assert checked.k_note == " (the most context_ids in a row)"
    assert Run.objects.count() == 0  # the check writes nothing


def test_given_k_the_check_reads_no_row_the_write_step_checks_them(version, tmp_path):
    rows = [*ok_rows(), ok_row("not-a-question")]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    plan = run_import_plan(path=path, evalset="support", name="base", k=3)
    checked = run_import_check(plan)
    assert (checked.k, checked.count, checked.single_pass, checked.k_note) == (3, 0, True, "")
    before = db_counts()
    with pytest.raises(ImportFailed) as excinfo, transaction.atomic():
        run_import_write(plan, checked)
    assert [(p.line, p.field) for p in excinfo.value.problems] == [(len(rows), "id")]
    assert db_counts() == before  # rolled back with the transaction


def test_the_check_refuses_a_row_of_an_unknown_question_with_its_line(version, tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [ok_row(QUESTIONS[0]["id"]), ok_row("not-a-question")])
    with pytest.raises(ImportFailed) as excinfo:
        run_import_check(run_import_plan(path=path, evalset="support", name="base"))
    problem = excinfo.value.problems[0]
    assert (problem.file, problem.line, problem.field) == ("rows.jsonl", 2, "id")
    assert "not-a-question" in problem.message


def test_the_write_step_stores_the_run_as_the_plan_and_the_check_say(version, rows_file):
    plan = run_import_plan(path=rows_file, evalset="support", name="base", judge_config=JUDGE, description="d")
    checked = run_import_check(plan)
    with transaction.atomic():
        run = run_import_write(plan, checked)
    assert (run.name, run.k, run.description, run.source_hash) == ("base", checked.k, "d", plan.source_hash)
    assert run.row_count == Row.objects.filter(run=run).count() == len(QUESTIONS)
    assert run.judge_config is not None and run.judge_config.config_hash == plan.judge["config_hash"]


def test_the_steps_give_what_run_import_gives(version, rows_file):
    plan = run_import_plan(path=rows_file, evalset="support", name="steps", k=3)
    with transaction.atomic():
        by_steps = run_import_write(plan, run_import_check(plan))
    whole = run_import(path=rows_file, evalset="support", name="whole", k=3).run
    assert by_steps.summary == whole.summary
    assert (by_steps.k, by_steps.gain, by_steps.row_count) == (whole.k, whole.gain, whole.row_count)
    assert by_steps.source_hash == whole.source_hash  # the name is not part of the content
