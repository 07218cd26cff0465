"""A run's rows and score table, and a frozen version's questions, never change and never go alone.

Doors: the model (save, delete), the querysets (update, delete, bulk_update), raw SQL (the triggers of
migration 0012, on SQLite here and on PostgreSQL in the marked tests). Deleting a whole run stays
possible (its rows and table go with it), on both databases, by the ORM and by SQL in one transaction.
"""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from evalcore.models import EvalSetVersion, FrozenError, Question, Row, Run, RunScoreTable
from evalcore.services.evalsets import question_as_dict

pytestmark = pytest.mark.django_db

ROWS_RULE = "frozen run rows"
TABLE_RULE = "frozen score table"


def snapshot(run: Run) -> dict:
    return {
        "rows": list(Row.objects.filter(run=run).order_by("pk").values()),
        "table": list(RunScoreTable.objects.filter(run=run).values_list("row_count", "data")),
        "questions": [question_as_dict(q) for q in Question.objects.filter(version=run.version_id).order_by("qid")],
    }


@pytest.fixture
def frozen(run):
    assert RunScoreTable.objects.filter(run=run).exists() and Row.objects.filter(run=run).count() == 5
    return run, snapshot(run)


def raw_refused(sql: str, params: list, *, says: str) -> None:
    with pytest.raises(IntegrityError, match=says):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)


# ---------------------------------------------------------------------------------------------
# The models and querysets
# ---------------------------------------------------------------------------------------------


def test_saving_an_existing_row_is_refused(frozen):
    run, before = frozen
    row = Row.objects.filter(run=run).first()
    row.answer = "Edited."
    with pytest.raises(FrozenError, match=ROWS_RULE):
        row.save()
    with pytest.raises(FrozenError, match=ROWS_RULE):
        row.save(update_fields=["answer"])
    assert snapshot(run) == before


def test_updating_or_deleting_rows_by_queryset_or_model_is_refused(frozen):
    run, before = frozen
    with pytest.raises(FrozenError, match=ROWS_RULE):
        Row.objects.filter(run=run).update(scores={})
    with pytest.raises(FrozenError, match=ROWS_RULE):
        run.rows.all().delete()
    with pytest.raises(FrozenError, match=ROWS_RULE):
        Row.objects.filter(run=run).first().delete()
    rows = list(Row.objects.filter(run=run))
    for row in rows:
        row.declined = True
    with pytest.raises(FrozenError, match=ROWS_RULE), transaction.atomic():
        Row.objects.bulk_update(rows, ["declined"])
    assert snapshot(run) == before


def test_changing_or_deleting_a_score_table_by_model_or_queryset_is_refused(frozen):
    run, before = frozen
    table = RunScoreTable.objects.get(run=run)
    table.row_count = 4
    with pytest.raises(FrozenError, match=TABLE_RULE):
        table.save()
    with pytest.raises(FrozenError, match=TABLE_RULE):
        table.delete()
    with pytest.raises(FrozenError, match=TABLE_RULE):
        RunScoreTable.objects.filter(run=run).update(data=b"")
    with pytest.raises(FrozenError, match=TABLE_RULE):
        RunScoreTable.objects.all().delete()
    assert snapshot(run) == before


# ---------------------------------------------------------------------------------------------
# Raw SQL: the triggers
# ---------------------------------------------------------------------------------------------


def check_raw_sql_doors(run: Run, before: dict) -> None:
    raw_refused("UPDATE evalcore_row SET answer = %s WHERE run_id = %s", ["Edited.", run.pk], says=ROWS_RULE)
    raw_refused("UPDATE evalcore_row SET scores = %s WHERE run_id = %s", ["{}", run.pk], says=ROWS_RULE)
    raw_refused("DELETE FROM evalcore_row WHERE run_id = %s", [run.pk], says=ROWS_RULE)
    raw_refused("UPDATE evalcore_runscoretable SET row_count = 4 WHERE run_id = %s", [run.pk], says=TABLE_RULE)
    raw_refused("DELETE FROM evalcore_runscoretable WHERE run_id = %s", [run.pk], says=TABLE_RULE)
    version = run.version_id
    raw_refused("DELETE FROM evalcore_question WHERE version_id = %s", [version], says="never deleted")
    raw_refused("DELETE FROM evalcore_question WHERE version_id = %s AND qid = 'q1'", [version], says="frozen")
    raw_refused("DELETE FROM evalcore_evalsetversion WHERE id = %s", [version], says="never deleted")
    Run.objects.filter(pk=run.pk).update(description="bookkeeping on the run itself is not frozen here")
    assert snapshot(run) == before


def test_raw_sql_updates_and_deletes_are_refused_by_the_triggers(frozen):
    check_raw_sql_doors(*frozen)


def test_a_run_marked_deleting_cannot_be_unmarked(frozen):
    run, _ = frozen
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE evalcore_run SET deleting = %s WHERE id = %s", [True, run.pk])
        raw_refused("UPDATE evalcore_run SET deleting = %s WHERE id = %s", [False, run.pk], says="one-way")
        transaction.set_rollback(True)


def test_questions_of_a_version_not_yet_sealed_may_be_deleted(db):
    """An import that fails half-way rolls back; before it seals, its questions are still a draft."""
    from evalcore.models import EvalSet

    draft = EvalSetVersion.objects.create(eval_set=EvalSet.objects.create(name="draft"), number=1, content_hash="x")
    Question.objects.bulk_create([Question(version=draft, qid="q1", text="Draft?")])
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM evalcore_question WHERE version_id = %s", [draft.pk])
        cursor.execute("DELETE FROM evalcore_evalsetversion WHERE id = %s", [draft.pk])
    assert not EvalSetVersion.objects.filter(pk=draft.pk).exists()


# ---------------------------------------------------------------------------------------------
# Deleting a whole run stays possible
# ---------------------------------------------------------------------------------------------


def check_whole_run_deletion(run: Run) -> None:
    version = run.version_id
    questions = Question.objects.filter(version=version).count()
    Run.objects.get(pk=run.pk).delete()  # the ORM: marks it deleting, then rows, table, run
    assert not Row.objects.filter(run_id=run.pk).exists() and not RunScoreTable.objects.filter(run_id=run.pk).exists()
    assert Question.objects.filter(version=version).count() == questions  # the eval set is untouched


def test_deleting_a_whole_run_takes_its_rows_and_score_table_with_it(frozen):
    check_whole_run_deletion(frozen[0])


def test_deleting_runs_by_queryset_works_too(frozen):
    run, _ = frozen
    assert Run.objects.filter(pk=run.pk).delete()[1]["evalcore.Row"] == 5
    assert not Row.objects.filter(run_id=run.pk).exists()


def test_raw_sql_may_delete_a_run_with_its_rows_in_one_transaction(frozen):
    """A script deleting the run first, then its children (foreign keys are checked at commit)."""
    run, _ = frozen
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM evalcore_run WHERE id = %s", [run.pk])
        cursor.execute("DELETE FROM evalcore_runscoretable WHERE run_id = %s", [run.pk])
        cursor.execute("DELETE FROM evalcore_row WHERE run_id = %s", [run.pk])
    assert not Row.objects.filter(run_id=run.pk).exists()


def test_the_triggers_are_installed_in_the_database(db):
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'evalcore_%'")
        else:
            cursor.execute("SELECT tgname FROM pg_trigger WHERE tgname LIKE 'evalcore_%' AND NOT tgisinternal")
        names = {row[0] for row in cursor.fetchall()}
    from importlib import import_module

    migration = import_module("evalcore.migrations.0012_run_rows_and_questions_refuse_update_and_delete")
    if connection.vendor == "sqlite":
        expected = set(migration.SQLITE_NAMES)
    else:
        expected = {
            "evalcore_row_frozen",
            "evalcore_scoretable_frozen",
            "evalcore_run_deleting_one_way",
            "evalcore_run_deleting_in_one_transaction",
            "evalcore_question_no_delete",
            "evalcore_version_no_delete",
        }
    assert expected <= names


@pytest.mark.django_db(transaction=True)
def test_a_flush_still_empties_every_table_and_leaves_the_triggers(run):
    """On SQLite flush deletes row by row; it lifts the triggers in its own transaction only."""
    call_command("flush", interactive=False, verbosity=0)
    assert not Run.objects.exists() and not Row.objects.exists() and not Question.objects.exists()
    test_the_triggers_are_installed_in_the_database(None)


# ---------------------------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------------------------


@pytest.mark.postgres
def test_on_postgresql_raw_sql_updates_and_deletes_are_refused(frozen):
    assert connection.vendor == "postgresql"
    check_raw_sql_doors(*frozen)


@pytest.mark.postgres
def test_on_postgresql_a_whole_run_is_deleted_by_the_orm(frozen):
    run, _ = frozen
    check_whole_run_deletion(run)
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the deferred checks run now, as at COMMIT


@pytest.mark.postgres
def test_on_postgresql_a_run_marked_deleting_must_go_in_the_same_transaction(frozen):
    run, before = frozen
    with pytest.raises(IntegrityError, match="one-way") as excinfo:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("UPDATE evalcore_run SET deleting = true WHERE id = %s", [run.pk])
            cursor.execute("DELETE FROM evalcore_row WHERE run_id = %s", [run.pk])
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # what COMMIT would do
    assert getattr(excinfo.value.__cause__, "sqlstate", None) == "23000"
    assert snapshot(run) == before
