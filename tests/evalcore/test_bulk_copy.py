"""The run import's bulk path on PostgreSQL: a COPY held goes out just after the connection's next query, so
that query does not wait for it, and nothing held is lost or sent twice, whatever fails; row ids come from the
sequence a block at a time; the rows' foreign keys are checked as they are written, not at the commit."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction

from evalcore.models import Row
from evalcore.services import run_store
from evalcore.services.bulk_copy import BackgroundCopy
from evalcore.services.importing import allocate_ids, foreign_keys_checked_as_written
from evalcore.services.runs import run_import
from evalcore.services.score_tables import score_table_read
from tests.files import write_jsonl

pytestmark = [pytest.mark.django_db(transaction=False), pytest.mark.postgres]

COPY = "COPY lsl_copy_test (n) FROM STDIN"


@pytest.fixture
def table():
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE lsl_copy_test (n integer NOT NULL)")  # gone with the test's transaction


def numbers() -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT n FROM lsl_copy_test ORDER BY n")
        return [n for (n,) in cursor.fetchall()]


def payload(*values: int) -> bytes:
    return b"".join(b"%d\n" % value for value in values)


def test_a_held_payload_goes_out_just_after_the_next_query_not_before_it(table):
    with BackgroundCopy() as copy:
        copy.hold(COPY, payload(1, 2))
        assert numbers() == []  # this query ran first; the payload was sent after it
        assert numbers() == [1, 2]  # waited for before the next one
    assert numbers() == [1, 2]


def test_a_second_payload_held_sends_the_first_and_the_end_sends_the_last(table):
    with BackgroundCopy() as copy:
        copy.hold(COPY, payload(1))
        copy.hold(COPY, payload(2))
        copy.hold(COPY, payload(3))
    assert numbers() == [1, 2, 3]


def test_wait_sends_what_is_held_and_raises_its_error_as_django_does(table):
    with pytest.raises(DatabaseError, match="invalid input syntax"):
        with BackgroundCopy() as copy:
            copy.hold(COPY, b"not a number\n")
            copy.wait()


def test_a_payload_held_before_a_savepoint_is_written_before_it_and_kept_when_it_rolls_back(table):
    with BackgroundCopy() as copy:
        copy.hold(COPY, payload(7))
        with pytest.raises(DatabaseError, match="no_such_table"):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT * FROM no_such_table")
    assert numbers() == [7]


def test_a_payload_held_inside_a_savepoint_that_ends_is_written_inside_it(table):
    with BackgroundCopy() as copy:
        with transaction.atomic():
            copy.hold(COPY, payload(1))
        with pytest.raises(RuntimeError, match="changed my mind"):
            with transaction.atomic():
                copy.hold(COPY, payload(2))
                raise RuntimeError("changed my mind")
    assert numbers() == [1]  # the second was sent before its savepoint's rollback, and rolled back with it


def test_a_payload_held_when_the_next_query_fails_is_reported_lost_not_dropped_in_silence(table):
    with BackgroundCopy() as copy:
        with pytest.raises(DatabaseError, match="no_such_table"):
            with transaction.atomic(), connection.cursor() as cursor:
                copy.hold(COPY, payload(3))
                cursor.execute("SELECT * FROM no_such_table")
        with pytest.raises(DatabaseError, match="were not written: the query after them failed"):
            copy.wait()
        copy.hold(COPY, payload(4))  # the error was reported once; the connection goes on
    assert numbers() == [4]


def test_an_error_in_the_block_sends_nothing_more(table):
    with pytest.raises(RuntimeError, match="scorer crashed"):
        with BackgroundCopy() as copy:
            copy.send(COPY, payload(1))
            copy.hold(COPY, payload(2))
            raise RuntimeError("scorer crashed")
    assert numbers() == [1]


def test_row_ids_from_blocks_that_do_not_match_the_batches_are_each_rows_own(tmp_path, monkeypatch):
    from evalcore.services.evalsets import evalset_import

    monkeypatch.setattr(run_store, "ID_BLOCK", 2500)  # 4,500 rows in batches of 2,000: a block ends mid-batch
    questions = [{"id": f"q{i}", "question": f"Question {i}?", "gold": [{"doc": f"d{i}"}]} for i in range(4500)]
    evalset_import(path=write_jsonl(tmp_path / "qs.jsonl", questions), name="big")
    rows = [
        {"id": f"q{i}", "retrieved": [f"d{i}" if i % 3 else "x", "y"], "context_ids": [f"d{i}" if i % 3 else "x"]}
        for i in range(4500)
    ]
    run = run_import(path=write_jsonl(tmp_path / "rows.jsonl", rows), evalset="big", name="r1", k=1).run
    stored = {
        pk: (qid, scores)
        for pk, qid, scores in Row.objects.filter(run=run).values_list("pk", "question__qid", "scores")
    }
    assert len(stored) == 4500
    table = score_table_read(run, metrics=["recall@1"], row_ids=True)
    assert table is not None and len(table) == 4500
    for qid, row_id, recall in zip(table.index, table["row"], table["recall@1"]):
        stored_qid, scores = stored[int(row_id)]
        assert stored_qid == qid
        assert scores["recall@1"] == recall == (1.0 if int(qid[1:]) % 3 else 0.0)


def insert_row(run, question_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO evalcore_row (run_id, question_id, retrieved, context_ids, context, answer, declined,"
            " claims, scores, metadata) VALUES (%s, %s, '[]', '[]', '', '', false, '[]', '{}', '{}')",
            [run.pk, question_id],
        )


def test_a_rows_foreign_keys_are_checked_at_each_statement_inside_the_block_and_deferred_again_after(run):
    missing = 10**12
    with foreign_keys_checked_as_written(Row):
        with pytest.raises(IntegrityError, match="question_id"), transaction.atomic():
            insert_row(run, missing)  # refused by the statement itself
    with pytest.raises(IntegrityError, match="question_id"):
        with transaction.atomic():
            insert_row(run, missing)  # accepted by the statement: deferred to the end again
            with connection.cursor() as cursor:
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # as a commit would, checked now


def test_ids_allocated_are_new_distinct_and_the_sequences_own():
    first = allocate_ids(Row, 3)
    second = allocate_ids(Row, 20_000)
    assert first is not None and second is not None
    assert len(set(first) | set(second)) == 20_003
    assert first == sorted(first) and max(first) < min(second)
    with connection.cursor() as cursor:
        cursor.execute("SELECT last_value FROM evalcore_row_id_seq")
        assert cursor.fetchone()[0] == max(second)


def test_row_ids_come_in_blocks_that_double_up_to_the_cap(run, monkeypatch):
    monkeypatch.setattr(run_store, "ID_BLOCK", 3)
    monkeypatch.setattr(run_store, "ID_BLOCK_MAX", 8)
    asked = []

    def allocate(model, count):
        asked.append(count)
        return allocate_ids(model, count)

    monkeypatch.setattr(run_store, "allocate_ids", allocate)
    writer = run_store._RowWriter(run)
    taken = [writer._ids(2) for _ in range(12)]
    assert asked == [3, 6, 8, 8]  # 3 + 6 + 8 + 8 = 25 ids for 24: one is left unused
    flat = [pk for ids in taken for pk in ids]
    assert len(flat) == len(set(flat)) == 24 and flat == sorted(flat)
    assert len(writer._ids(9)) == 9 and asked[-1] == 8  # more than a block: the rest and a new block (9 - 1 spare = 8)
