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


# measured and pinned (session and user included); neither depends on the number of rows or decisions
COMPARISON_PAGE = 6
RUN_PAGE = 4
ROWS_PAGE = 5


@pytest.mark.parametrize("n_questions", [12, 40])
def test_the_comparison_page_takes_the_same_queries_whatever_the_number_of_rows(
    owner_client, owner, tmp_path, django_assert_num_queries, n_questions
):
    comparison = comparison_of(n_questions, tmp_path, owner)
    with django_assert_num_queries(COMPARISON_PAGE):
        response = owner_client.get(reverse("evalcore:comparison", args=[comparison.pk]))
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
