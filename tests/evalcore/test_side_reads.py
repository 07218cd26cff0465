"""A run import's question lookups and row ids on a second PostgreSQL connection (``evalcore.services.side_reads``).

The import must store exactly what it stores without them, report the same problems, leave no connection
open, fall back to its own connection inside a caller's transaction, and fail as a database error (writing
nothing) when the second connection is lost.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from django.db import OperationalError, connection, transaction

from evalcore.models import Row, Run
from evalcore.services import runs as runs_service
from evalcore.services import side_reads
from evalcore.services.problems import ImportFailed
from evalcore.services.run_questions import QuestionIndex
from evalcore.services.runs import BATCH, run_import

from .test_streaming import frozen_version

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

QUESTIONS = 2 * BATCH + 300  # three batches, the last one short


def rows_file(path: Path, ids: list[str]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for n, qid in enumerate(ids):
            row = {
                "id": qid,
                "retrieved": [f"d{qid[1:].lstrip('0') or '0'}", f"x{n}"],
                "context": ["one chunk", "two chunks"],
                "answer": f"Answer {n}.",
                "claims": [{"text": f"Claim {n}.", "supported": n % 3 != 0}],
                "scores": {"latency": n / 7},
            }
            handle.write(json.dumps(row) + "\n")
    return path


def stored(run: Run) -> list[tuple]:
    return list(
        Row.objects.filter(run=run)
        .order_by("question__qid")
        .values_list("question__qid", "retrieved", "context", "answer", "claims", "scores", "metadata")
    )


def connections_open() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return cursor.fetchone()[0]


@pytest.fixture
def version():
    return frozen_version(QUESTIONS)


@pytest.fixture
def entered(monkeypatch):
    """How many times the import opened its second connection."""
    count = {"n": 0}
    enter = side_reads.SideReads.__enter__

    def counting(self):
        count["n"] += 1
        return enter(self)

    monkeypatch.setattr(side_reads.SideReads, "__enter__", counting)
    return count


def test_a_run_imported_with_side_reads_stores_what_one_imported_without_them_stores(
    version, tmp_path, entered, monkeypatch
):
    ids = [f"q{i:06d}" for i in range(QUESTIONS)][::-1]  # not in the version's order
    path = rows_file(tmp_path / "rows.jsonl", ids)
    before = connections_open()
    side = run_import(path=path, evalset="big", name="side", k=2).run
    assert entered["n"] == 1
    assert connections_open() == before, "the second connection is closed when the import ends"
    monkeypatch.setattr(runs_service, "side_reads_possible", lambda: False)
    alone = run_import(path=path, evalset="big", name="alone", k=2).run
    assert entered["n"] == 1
    assert side.row_count == alone.row_count == QUESTIONS
    assert stored(side) == stored(alone)
    assert side.summary == alone.summary
    pks = list(Row.objects.filter(run=side).values_list("pk", flat=True))
    assert len(set(pks)) == QUESTIONS  # ids from the sequence on the other connection: all distinct


def test_the_problems_found_with_side_reads_are_the_ones_found_without(version, tmp_path, monkeypatch):
    ids = [f"q{i:06d}" for i in range(QUESTIONS)]
    ids[BATCH + 5] = "nope"  # unknown, in the second batch
    ids[2 * BATCH + 1] = ids[3]  # a second row for a question of the first batch, in the third
    path = rows_file(tmp_path / "rows.jsonl", ids)

    def problems() -> list[tuple]:
        with pytest.raises(ImportFailed) as excinfo:
            run_import(path=path, evalset="big", name="bad", k=2)
        return [(p.line, p.field, p.message) for p in excinfo.value.problems]

    with_side = problems()
    monkeypatch.setattr(runs_service, "side_reads_possible", lambda: False)
    assert with_side == problems()
    assert [(line, field) for line, field, _ in with_side] == [(BATCH + 6, "id"), (2 * BATCH + 2, "id")]
    assert "first on line 4" in with_side[1][2]
    assert not Run.objects.filter(name="bad").exists()


def test_inside_a_callers_transaction_every_read_stays_on_the_import_connection(version, tmp_path, entered):
    path = rows_file(tmp_path / "rows.jsonl", [f"q{i:06d}" for i in range(QUESTIONS)])
    with transaction.atomic():
        assert not side_reads.side_reads_possible()  # what it writes here another connection could not see
        run = run_import(path=path, evalset="big", name="inside", k=2).run
    assert entered["n"] == 0
    assert run.row_count == QUESTIONS


def test_a_lost_side_connection_fails_the_import_as_a_database_error_and_writes_nothing(version, tmp_path, monkeypatch):
    path = rows_file(tmp_path / "rows.jsonl", [f"q{i:06d}" for i in range(QUESTIONS)])
    lookup = QuestionIndex.lookup
    calls = {"n": 0}

    def lost_on_the_second_batch(self, qids, *, on=None):
        calls["n"] += 1
        if on is not None and calls["n"] == 2:
            with psycopg.connect(**connection.get_connection_params(), autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", [on.info.backend_pid])
        return lookup(self, qids, on=on)

    monkeypatch.setattr(QuestionIndex, "lookup", lost_on_the_second_batch)
    with pytest.raises(OperationalError):
        run_import(path=path, evalset="big", name="lost", k=2)
    assert not Run.objects.filter(name="lost").exists()
    assert not Row.objects.exists()
