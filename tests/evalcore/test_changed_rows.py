"""The questions that changed between two runs, at any size: the comparison keeps the largest
changes per metric when it is made, its page and the first page of the list read them in one
query, and every changed row can be read page by page, sorted in the database, the same order
either way (later pages read from the order kept in blocks, see test_changed_order)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalcore.models import Comparison
from evalcore.selectors import (
    CHANGED_KEPT,
    ChangedRows,
    changed_count,
    changed_items,
    changed_rows,
    changed_rows_list,
    changed_rows_query,
)
from evalcore.services.comparisons import compare_runs
from tests.factories import JUDGE, make_eval_set, make_run, ok_row

pytestmark = pytest.mark.django_db

N = 60


@pytest.fixture
def comparison(tmp_path, owner):
    return make_comparison(tmp_path, owner)


def make_comparison(tmp_path, owner):
    """Sixty questions; the candidate's faithfulness falls on some, rises on others, stays on the rest."""
    questions = [
        {"id": f"q{i:03d}", "question": f"Question {i}?", "type": "ab"[i % 2], "gold": [{"doc": "d1"}]}
        for i in range(N)
    ]
    make_eval_set(folder=tmp_path, questions=questions, name="moves")

    def claims(supported: int) -> list[dict]:
        return [{"text": f"C{j}.", "supported": j < supported} for j in range(4)]

    base = make_run(
        folder=tmp_path,
        rows=[ok_row(q["id"], claims=claims(2)) for q in questions],
        evalset="moves",
        name="base",
        k=3,
        judge_config=JUDGE,
    )
    moved = [claims(i % 5) for i in range(N)]  # 0..4 supported of 4: faithfulness -0.5 .. +0.5
    cand = make_run(
        folder=tmp_path,
        rows=[ok_row(q["id"], claims=moved[i]) for i, q in enumerate(questions)],
        evalset="moves",
        name="cand",
        k=3,
        judge_config=JUDGE,
    )
    return compare_runs(base=base, candidate=cand, user=owner, iterations=200).comparison


def expected(direction: str = "all") -> list[tuple[str, float]]:
    deltas = [(f"q{i:03d}", (i % 5) / 4 - 0.5) for i in range(N)]
    keep = {"all": lambda d: d != 0, "down": lambda d: d < 0, "up": lambda d: d > 0}[direction]
    return sorted([(q, d) for q, d in deltas if keep(d)], key=lambda item: (-abs(item[1]), item[0]))


def test_the_comparison_keeps_the_largest_drops_and_rises_and_how_many_changed(comparison):
    kept = comparison.changed["faithfulness"]
    assert kept["count"] == len(expected()) == 48 and kept["kept"] == CHANGED_KEPT
    assert [e["question"] for e in kept["down"]] == [q for q, _ in expected("down")]
    assert [e["question"] for e in kept["up"]] == [q for q, _ in expected("up")]
    assert kept["down"][0]["delta"] == -0.5 and kept["down"][0]["base"] == 0.5 and kept["down"][0]["candidate"] == 0.0


def test_the_database_sort_and_the_kept_changes_give_the_same_order(comparison):
    for direction in ("all", "down", "up"):
        rows = list(changed_rows_query(comparison, "faithfulness", direction=direction))
        assert [(r.question.qid, r.delta) for r in rows] == expected(direction)
        assert changed_count(comparison, "faithfulness", direction=direction) == len(rows)
    items = changed_items(comparison, list(changed_rows_query(comparison, "faithfulness")[:5]))
    assert [(i["question"].qid, i["candidate"].run_id) for i in items] == [
        (q, comparison.candidate_id) for q, _ in expected()[:5]
    ]
    assert [i["question"].qid for i in changed_rows(comparison, "faithfulness", limit=10)] == [
        q for q, _ in expected()[:10]
    ]


def test_a_comparison_logged_before_changes_were_kept_reads_them_from_the_database(comparison, owner_client):
    Comparison.objects.filter(pk=comparison.pk).values("pk")  # a log: rewrite the field with SQL, as old rows have it
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("UPDATE evalcore_comparison SET changed = %s WHERE id = %s", ["{}", comparison.pk])
    old = Comparison.objects.get(pk=comparison.pk)
    assert [i["question"].qid for i in changed_rows(old, "faithfulness")] == [q for q, _ in expected()[:25]]
    page = owner_client.get(reverse("evalcore:comparison", args=[old.pk]), {"metric": "faithfulness"}).content.decode()
    assert page.count('<details class="panel changed">') == 25 and "questions whose faithfulness changed" in page


def test_the_changed_rows_page_lists_every_change_a_page_at_a_time(comparison, owner_client):
    url = reverse("evalcore:changed-rows", args=[comparison.pk])
    first = owner_client.get(url, {"metric": "faithfulness"}).content.decode()
    assert first.count("<tr>") - 1 == 48  # one header row; 48 changes fit a page of 50
    assert "48 in all" not in first  # one page: no pager
    downs = owner_client.get(url, {"metric": "faithfulness", "direction": "down"}).content.decode()
    assert downs.count("−0.500") + downs.count("-0.500") >= 12 and "+0.500" not in downs
    none = owner_client.get(url, {"metric": "recall@3"}).content.decode()
    assert "No question's recall@3 changed" in none
    bad = owner_client.get(url, {"metric": "nope"}).content.decode()
    assert "this comparison has no metric" in bad


def test_the_api_pages_through_every_change_in_the_same_order(comparison, owner_client):
    url = f"/api/comparisons/{comparison.pk}/changed/"
    first = owner_client.get(url, {"metric": "faithfulness", "limit": 20}).json()
    second = owner_client.get(url, {"metric": "faithfulness", "limit": 20, "offset": 20}).json()
    third = owner_client.get(url, {"metric": "faithfulness", "limit": 20, "offset": 40}).json()
    assert first["count"] == 48 and first["next"] and third["next"] is None
    got = [(r["id"], r["delta"]) for page in (first, second, third) for r in page["results"]]
    assert got == expected()
    assert first["results"][0]["base"] == 0.5 and first["results"][0]["candidate"] == 0.0
    assert owner_client.get(url, {"metric": "nope"}).status_code == 404
    assert owner_client.get(url).status_code == 400  # metric is required
    detail = owner_client.get(f"/api/comparisons/{comparison.pk}/").json()
    assert detail["changed"]["faithfulness"]["count"] == 48


def test_annotators_never_see_changed_rows(comparison, annotator_client):
    assert annotator_client.get(reverse("evalcore:changed-rows", args=[comparison.pk])).status_code == 403
    assert annotator_client.get(f"/api/comparisons/{comparison.pk}/changed/?metric=faithfulness").status_code == 403


def test_the_score_tables_list_every_change_in_the_database_order_whatever_the_page(comparison):
    for direction in ("all", "down", "up"):
        changes = changed_rows_list(comparison, "faithfulness", direction=direction)
        assert isinstance(changes, ChangedRows)
        in_database = [
            (r.question.qid, r.delta, r.candidate_row)
            for r in changed_rows_query(comparison, "faithfulness", direction=direction)
        ]
        pages = [changes[start : start + 7] for start in range(0, len(changes), 7)]
        listed = [(r.question.qid, r.delta, r.candidate_row) for page in pages for r in page]
        assert listed == in_database and len(changes) == len(in_database) == len(expected(direction))
        assert changed_count(comparison, "faithfulness", direction=direction) == len(in_database)
    assert changes[3].question.qid == expected("up")[3][0] and changes[-1].question.qid == expected("up")[-1][0]


def test_a_page_is_read_only_when_it_is_used(comparison, django_assert_num_queries):
    changes = changed_rows_list(comparison, "faithfulness")
    page = changes[10:20]
    # no kept order yet: the two score tables (one query), the order kept (a savepoint, the header, the block,
    # the release), then the page's rows
    with django_assert_num_queries(7):
        assert len(page) == 10
    with django_assert_num_queries(1):  # the order is read once
        assert len(changes[20:30]) == 10
    built = [r.question.qid for r in changes[20:30]]
    kept = changed_rows_list(comparison, "faithfulness")
    with django_assert_num_queries(3):  # then read from what was kept: the header, the block, the page's rows
        assert [r.question.qid for r in kept[20:30]] == built


def test_runs_without_score_tables_are_listed_by_the_database(tmp_path, owner, monkeypatch):
    # as runs imported before score tables were kept: the import writes none
    monkeypatch.setattr("evalcore.services.run_store.store_score_table", lambda run, path, *, row_count: None)
    untabled = make_comparison(tmp_path, owner)
    changes = changed_rows_list(untabled, "faithfulness")
    assert changes.order() is None  # no table: sorted in the database, paged the same way
    assert [(r.question.qid, r.delta) for r in changes[0:100]] == expected() and len(changes) == len(expected())
    assert changed_count(untabled, "faithfulness", direction="down") == len(expected("down"))
