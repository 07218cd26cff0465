"""Hypothesis strategies shared by the engine tests: questions with ranked ids and graded gold."""

from __future__ import annotations

from hypothesis import strategies as st

#: Every id has the same length (4 characters): ranx's numba kernels recompile for a longer id.
DOCS = [f"d{i:03d}" for i in range(40)]


@st.composite
def graded_gold(draw, *, pool_size: int = 12, zero_grades: bool = False, answerable: bool = True, max_size: int = 6):
    """A mapping doc -> grade. With ``answerable`` at least one grade is above 0."""
    pool = DOCS[:pool_size]
    low = 0 if zero_grades else 1
    if not answerable:
        # no relevant gold: empty, or only grade-0 judgments
        return draw(st.dictionaries(st.sampled_from(pool), st.just(0), max_size=3))
    gold = draw(st.dictionaries(st.sampled_from(pool), st.integers(low, 3), min_size=1, max_size=max_size))
    if not any(g > 0 for g in gold.values()):
        first = sorted(gold)[0]
        gold[first] = draw(st.integers(1, 3))
    return gold


@st.composite
def ranked_list(draw, *, pool_size: int = 12, duplicates: bool = False, min_size: int = 0, max_size: int = 12):
    pool = DOCS[:pool_size]
    return draw(st.lists(st.sampled_from(pool), min_size=min_size, max_size=max_size, unique=not duplicates))


@st.composite
def question(
    draw, *, duplicates: bool = False, zero_grades: bool = False, answerable: bool = True, pool_size: int = 12
):
    """(ranked, gold) for one question."""
    gold = draw(graded_gold(pool_size=pool_size, zero_grades=zero_grades, answerable=answerable))
    ranked = draw(ranked_list(pool_size=pool_size, duplicates=duplicates))
    return ranked, gold


@st.composite
def question_batch(
    draw,
    *,
    duplicates: bool = True,
    zero_grades: bool = True,
    unanswerable: bool = True,
    min_k: int = 0,
    max_k: int = 8,
    max_questions: int = 10,
):
    """Lists ``ranked``, ``gold``, ``k`` (one per question) and ``declined`` for a batch."""
    n = draw(st.integers(1, max_questions))
    ranked, gold, ks, declined = [], [], [], []
    for _ in range(n):
        is_answerable = draw(st.booleans()) if unanswerable else True
        if unanswerable and draw(st.integers(0, 3)) > 0:
            is_answerable = True  # mostly answerable
        r, g = draw(question(duplicates=duplicates, zero_grades=zero_grades, answerable=is_answerable))
        ranked.append(r)
        gold.append(g)
        ks.append(draw(st.integers(min_k, max_k)))
        declined.append(draw(st.booleans()))
    return ranked, gold, ks, declined
