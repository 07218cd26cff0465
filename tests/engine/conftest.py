"""Fixtures of the engine tests.

ranx is one of the reference implementations the retrieval metrics are checked against. Its
metrics are numba-compiled functions; the session runs them interpreted instead (same source, no
50 s compilation), see ``ranx_reference.py``. The compiled tool is checked by the ``slow`` test.
"""

from __future__ import annotations

import pytest

from .ranx_reference import RANX_METRICS, evaluate


@pytest.fixture(scope="session")
def ranx_ready():
    """Import ranx once (interpreted) and check it answers; return the evaluation helper."""
    qrels = {"q000": {"d000": 1, "d001": 2}, "q001": {"d002": 1}}
    run = {"q000": {"d000": 0.9, "d005": 0.8, "d001": 0.1}, "q001": {"d002": 0.5, "d004": 0.6}}
    scores = evaluate(qrels, run)
    assert set(scores) == set(RANX_METRICS)
    return evaluate
