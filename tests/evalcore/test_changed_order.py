"""The changed-rows order kept in blocks: the same rows, order and numbers as computing it from the score tables
(:meth:`ChangedRows.order`) and as the database sort (:func:`changed_rows_query`), a deep page reading only its
header and block (never a score table), built once even when two requests build it at once, and never half."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import ProtectedError
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evalcore.models import ChangedRowsBlock, ChangedRowsOrder, Comparison, FrozenError, RunScoreTable
from evalcore.selectors import ChangedRows, changed_count, changed_rows_list, changed_rows_query
from evalcore.services import changed_order
from evalcore.services.changed_order import keep_changed_order
from evalcore.services.comparisons import compare_runs
from tests.factories import make_eval_set, make_run, ok_row, qid_of

N = 1450
BLOCK = 100  # small blocks, so a run of a thousand changes spans several


def grade(i: int, step: int, undefined: int) -> float | None:
    """Eleven values (many ties), undefined on every ``undefined``-th question."""
    return None if i % undefined == 0 else (i * step % 11) / 10


def make_comparison(tmp_path, owner, name: str = "blocks") -> Comparison:
    """Questions 0..N-1; the baseline lacks the last 40, the candidate the first 40; grades tie and are undefined
    here and there (NaN in the score tables)."""
    questions = [{"id": qid_of(i), "question": f"Question {i}?", "gold": [{"doc": "d1"}]} for i in range(N)]
    make_eval_set(folder=tmp_path, questions=questions, name=name)
    base = make_run(
        folder=tmp_path,
        rows=[ok_row(qid_of(i), scores={"grade": grade(i, 7, 13)}) for i in range(N - 40)],
        evalset=name,
        name="base",
    )
    cand = make_run(
        folder=tmp_path,
        rows=[ok_row(qid_of(i), scores={"grade": grade(i, 3, 17)}) for i in range(40, N)],
        evalset=name,
        name="cand",
    )
    return compare_runs(base=base, candidate=cand, metrics=["grade"], user=owner, iterations=50).comparison


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(changed_order, "BLOCK", BLOCK)


@pytest.fixture
def comparison(db, tmp_path, owner, small_blocks):
    return make_comparison(tmp_path, owner)


def listed(rows) -> list[tuple]:
    return [(r.question.qid, r.pk, r.candidate_row, r.base_score, r.cand_score, r.delta) for r in rows]


def computed(comparison: Comparison, direction: str) -> list[tuple]:
    """Today's computation from the score tables (the builder), read without what was kept."""
    order = ChangedRows(comparison, "grade", direction=direction).order()
    qids = dict(changed_rows_query(comparison, "grade", direction=direction).values_list("pk", "question__qid"))
    return [
        (qids[int(b)], int(b), int(c), float(x), float(y), float(d))
        for b, c, x, y, d in zip(
            order["base_row"], order["candidate_row"], order["base"], order["candidate"], order["delta"]
        )
    ]


@pytest.mark.parametrize("direction", ["all", "down", "up"])
def test_kept_pages_give_the_rows_order_and_numbers_of_the_builder_and_of_the_database_sort(comparison, direction):
    in_database = listed(changed_rows_query(comparison, "grade", direction=direction))
    assert computed(comparison, direction) == in_database
    assert len(in_database) > 4 * BLOCK and len({d[-1] for d in in_database}) < len(in_database)  # blocks, ties
    changed_rows_list(comparison, "grade", direction=direction)[0:1][0]  # noqa: B018  # builds the kept order
    assert ChangedRowsOrder.objects.get(comparison=comparison, direction=direction).count == len(in_database)
    size, pages = 50, -(-len(in_database) // 50)
    for page in (1, 2, pages // 2, pages - 1, pages, pages + 1, pages + 5):
        fresh = changed_rows_list(comparison, "grade", direction=direction)  # read from the blocks, nothing cached
        got = listed(fresh[(page - 1) * size : page * size])
        assert got == in_database[(page - 1) * size : page * size], page
    straddling = changed_rows_list(comparison, "grade", direction=direction)[BLOCK - 7 : 2 * BLOCK + 3]
    assert listed(straddling) == in_database[BLOCK - 7 : 2 * BLOCK + 3]  # three blocks
    assert listed([changed_rows_list(comparison, "grade", direction=direction)[-1]]) == in_database[-1:]
    assert changed_count(comparison, "grade", direction=direction) == len(in_database)


def test_a_deep_page_reads_its_header_and_block_and_no_score_table(comparison, owner_client):
    url = reverse("evalcore:changed-rows", args=[comparison.pk])
    total = changed_count(comparison, "grade")
    assert total > 1000
    assert owner_client.get(url, {"metric": "grade", "page": "2"}).status_code == 200  # builds the kept order
    expected = [r[0] for r in listed(changed_rows_query(comparison, "grade"))[950:1000]]
    with CaptureQueriesContext(connection) as queries:
        page = owner_client.get(url, {"metric": "grade", "page": "20"}).content.decode()
    sqls = [q["sql"] for q in queries.captured_queries]
    assert len(sqls) == 6  # session, user, comparison, the header, the block, both runs' rows of the page
    assert not any(RunScoreTable._meta.db_table in sql for sql in sqls)
    blocks = [sql for sql in sqls if ChangedRowsBlock._meta.db_table in sql]
    assert len(blocks) == 1 and re.search(r'"block" >= 9 AND .*"block" <= 9\b', blocks[0])  # positions 950..999
    assert [qid for qid in expected if qid in page] == expected
    assert page.index(expected[0]) < page.index(expected[-1])
    with CaptureQueriesContext(connection) as api_queries:
        api = owner_client.get(
            f"/api/comparisons/{comparison.pk}/changed/", {"metric": "grade", "offset": 990, "limit": 20}
        )
    assert [r["id"] for r in api.json()["results"]] == [
        r[0] for r in listed(changed_rows_query(comparison, "grade"))[990:1010]
    ]
    api_sqls = [q["sql"] for q in api_queries.captured_queries]
    assert not any(RunScoreTable._meta.db_table in sql for sql in api_sqls)
    assert any(re.search(r'"block" >= 9 AND .*"block" <= 10\b', sql) for sql in api_sqls)  # straddles two blocks
    assert api.json()["count"] == total


def test_a_late_builder_reads_the_order_the_first_one_kept(comparison):
    order = ChangedRows(comparison, "grade").order()
    first = keep_changed_order(comparison, "grade", "all", order)
    again = keep_changed_order(comparison, "grade", "all", order)  # lost the race: the header exists
    assert again.pk == first.pk and ChangedRowsOrder.objects.count() == 1
    assert ChangedRowsBlock.objects.filter(order=first).count() == -(-len(order["delta"]) // BLOCK)


def test_an_interrupted_build_leaves_nothing_and_the_next_request_builds(comparison, monkeypatch):
    real = ChangedRowsBlock.objects.bulk_create

    def half(blocks, batch_size=None):
        blocks = list(blocks)
        real(blocks[:3], batch_size=batch_size)
        raise OSError("the connection dropped mid-way")

    monkeypatch.setattr(ChangedRowsBlock.objects, "bulk_create", half)
    with pytest.raises(OSError):
        len(changed_rows_list(comparison, "grade"))
    assert not ChangedRowsOrder.objects.exists() and not ChangedRowsBlock.objects.exists()
    monkeypatch.undo()
    monkeypatch.setattr(changed_order, "BLOCK", BLOCK)
    in_database = listed(changed_rows_query(comparison, "grade"))
    assert len(changed_rows_list(comparison, "grade")) == len(in_database)
    assert listed(changed_rows_list(comparison, "grade")[600:650]) == in_database[600:650]


def test_a_foreign_direction_is_refused_by_the_form_the_selector_and_the_database(comparison, owner_client):
    page = owner_client.get(
        reverse("evalcore:changed-rows", args=[comparison.pk]), {"metric": "grade", "direction": "sideways", "page": 2}
    )
    assert page.status_code == 200 and "Select a valid choice" in page.content.decode()
    # refused as a whole, as before: the first page of every change, from what the comparison kept; nothing built
    assert not ChangedRowsOrder.objects.exists()
    with pytest.raises(ValueError):
        ChangedRows(comparison, "grade", direction="sideways")
    with pytest.raises(IntegrityError), transaction.atomic():
        ChangedRowsOrder.objects.create(comparison=comparison, metric="grade", direction="side", count=0, block_size=1)


def test_a_kept_order_never_changes_and_goes_with_its_comparison(comparison):
    len(changed_rows_list(comparison, "grade", direction="down"))
    header = ChangedRowsOrder.objects.get()
    with pytest.raises(FrozenError):
        header.save()
    with pytest.raises(FrozenError):
        ChangedRowsBlock.objects.filter(order=header).update(block=0)
    with pytest.raises(FrozenError):
        ChangedRowsOrder.objects.all().delete()
    with pytest.raises(ProtectedError):  # as before: its gate decisions keep a comparison
        comparison.delete()
    comparison.decisions.all().delete()
    comparison.delete()
    assert not ChangedRowsOrder.objects.exists() and not ChangedRowsBlock.objects.exists()


def test_an_empty_list_is_kept_as_a_header_without_blocks(db, tmp_path, owner, small_blocks):
    questions = [{"id": qid_of(i), "question": f"Q{i}?", "gold": [{"doc": "d1"}]} for i in range(5)]
    make_eval_set(folder=tmp_path, questions=questions, name="still")
    runs = [
        make_run(
            folder=tmp_path, rows=[ok_row(q["id"], scores={"grade": 0.5}) for q in questions], evalset="still", name=n
        )
        for n in ("a", "b")
    ]
    comparison = compare_runs(base=runs[0], candidate=runs[1], metrics=["grade"], user=owner, iterations=50).comparison
    changes = changed_rows_list(comparison, "grade", direction="up")
    assert len(changes) == 0 and list(changes[0:50]) == []
    assert ChangedRowsOrder.objects.get().count == 0 and not ChangedRowsBlock.objects.exists()


def test_blocks_hold_exact_float64(comparison):
    order = ChangedRows(comparison, "grade").order()
    keep_changed_order(comparison, "grade", "all", order)
    data = b"".join(bytes(b) for b in ChangedRowsBlock.objects.order_by("block").values_list("data", flat=True))
    entries = np.frombuffer(data, dtype=changed_order.ENTRY)
    for name in ("base_row", "candidate_row", "base", "candidate", "delta"):
        assert np.array_equal(entries[name], order[name])  # bit for bit: 0.7 - 0.3 stays 0.39999999999999997


@pytest.mark.django_db(transaction=True)
def test_two_first_requests_at_once_keep_one_order(tmp_path, owner, small_blocks, monkeypatch):
    comparison = make_comparison(tmp_path, owner, name="race")
    both_missed = threading.Barrier(2, timeout=30)
    real = keep_changed_order

    def meet_then_keep(*args, **kwargs):
        both_missed.wait()  # both requests found no header: both insert one (PostgreSQL: the second waits on the
        # first's uncommitted key, then fails; SQLite: the second waits for the write lock, then fails)
        return real(*args, **kwargs)

    monkeypatch.setattr("evalcore.selectors_changed.keep_changed_order", meet_then_keep)
    results, errors = [], []

    def request() -> None:
        try:
            changes = changed_rows_list(Comparison.objects.get(pk=comparison.pk), "grade")
            results.append((changes.kept().pk, listed(changes[700:750])))
        except Exception as error:  # noqa: BLE001  # reported below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=request) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert results[0] == results[1] and results[0][1] == listed(changed_rows_query(comparison, "grade"))[700:750]
    assert ChangedRowsOrder.objects.count() == 1
    assert ChangedRowsBlock.objects.count() == -(-ChangedRowsOrder.objects.get().count // BLOCK)
