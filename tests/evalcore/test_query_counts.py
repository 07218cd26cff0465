"""Pinned SQL query counts on the eval owner's hot pages: a change that adds a query per row or per
decision shows up here, not in production at 100,000 rows."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalcore.services.comparisons import compare_runs
from tests.factories import JUDGE, make_eval_set, make_run, ok_row

pytestmark = pytest.mark.django_db


def comparison_of(n_questions: int, tmp_path, owner):
    """A comparison on ``n_questions`` questions of two types where every candidate row changed."""
    questions = [
        {"id": f"q{i:03d}", "question": f"Question {i}?", "type": "ab"[i % 2], "gold": [{"doc": "d1"}]}
        for i in range(n_questions)
    ]
    make_eval_set(folder=tmp_path, questions=questions, name=f"set{n_questions}")
    ids = [q["id"] for q in questions]
    base = make_run(
        folder=tmp_path,
        rows=[ok_row(q) for q in ids],
        evalset=f"set{n_questions}",
        name="base",
        k=3,
        judge_config=JUDGE,
    )
    worse = [{"text": "A.", "supported": False}, {"text": "B.", "supported": False}]
    cand = make_run(
        folder=tmp_path,
        rows=[ok_row(q, claims=worse) for q in ids],
        evalset=f"set{n_questions}",
        name="cand",
        k=3,
        judge_config=JUDGE,
    )
    return compare_runs(base=base, candidate=cand, user=owner, iterations=200).comparison


# measured and pinned (session and user included); none depends on the number of rows or decisions: the
# comparison page reads the changes kept with the comparison (one query for both rows of each), the rows page
# takes its count from the run, and the changed-rows list its count from the comparison
COMPARISON_PAGE = 5
RUN_PAGE = 4
ROWS_PAGE = 4
FILTERED_ROWS_PAGE = 4  # no count: one row past the page says whether another follows
CHANGED_ROWS_PAGE = 4  # the first page: the changes kept with the comparison (both rows in one query)
# the first later page builds the kept order: no header yet, both score tables, then header and blocks in one
# transaction (a savepoint here), then the page's rows
CHANGED_ROWS_BUILD = 10
CHANGED_ROWS_LATER_PAGE = 6  # the kept order's header, the page's block, then both runs' rows of the page
CHANGED_ROWS_API = 4


@pytest.mark.parametrize("n_questions", [12, 40])
def test_the_comparison_page_takes_the_same_queries_whatever_the_number_of_rows(
    owner_client, owner, tmp_path, django_assert_num_queries, n_questions
):
    comparison = comparison_of(n_questions, tmp_path, owner)
    with django_assert_num_queries(COMPARISON_PAGE):
        response = owner_client.get(reverse("evalcore:comparison", args=[comparison.pk]), {"metric": "faithfulness"})
    assert response.status_code == 200 and "OVERALL" in response.content.decode()


@pytest.mark.parametrize("n_questions", [12, 40])
def test_the_run_and_rows_pages_take_the_same_queries_whatever_the_number_of_rows(
    owner_client, owner, tmp_path, django_assert_num_queries, n_questions
):
    comparison = comparison_of(n_questions, tmp_path, owner)
    with django_assert_num_queries(RUN_PAGE):
        assert owner_client.get(reverse("evalcore:run", args=[comparison.base_id])).status_code == 200
    with django_assert_num_queries(ROWS_PAGE):
        assert owner_client.get(reverse("evalcore:rows", args=[comparison.base_id])).status_code == 200


@pytest.mark.parametrize("n_questions", [12, 40])
def test_a_filtered_rows_page_takes_the_same_queries_whatever_the_number_of_rows(
    owner_client, owner, tmp_path, django_assert_num_queries, n_questions
):
    comparison = comparison_of(n_questions, tmp_path, owner)
    url = reverse("evalcore:rows", args=[comparison.base_id])
    with django_assert_num_queries(FILTERED_ROWS_PAGE):
        assert owner_client.get(url, {"type": "a", "metric": "faithfulness", "low": "0"}).status_code == 200


@pytest.mark.parametrize("n_questions", [60, 120])
def test_the_changed_rows_list_takes_the_same_queries_whatever_the_number_of_rows(
    owner_client, owner, tmp_path, django_assert_num_queries, n_questions
):
    comparison = comparison_of(n_questions, tmp_path, owner)
    url = reverse("evalcore:changed-rows", args=[comparison.pk])
    with django_assert_num_queries(CHANGED_ROWS_PAGE):
        assert owner_client.get(url, {"metric": "faithfulness"}).status_code == 200
    with django_assert_num_queries(CHANGED_ROWS_BUILD):
        assert owner_client.get(url, {"metric": "faithfulness", "page": "2"}).status_code == 200
    with django_assert_num_queries(CHANGED_ROWS_LATER_PAGE):
        assert owner_client.get(url, {"metric": "faithfulness", "page": "2"}).status_code == 200
    with django_assert_num_queries(CHANGED_ROWS_API):
        api = owner_client.get(f"/api/comparisons/{comparison.pk}/changed/", {"metric": "faithfulness", "limit": 10})
    assert api.json()["count"] == n_questions
