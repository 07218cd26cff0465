"""ranx as a reference implementation, run two ways: interpreted (every session) or compiled (``slow``).

ranx writes its metrics as Python functions decorated with numba's ``@njit(cache=True)``. Compiling
them costs about 50 s of CPU on a cold machine (then numba caches the machine code on disk, in
``__pycache__`` beside ranx's sources when that is writable, else in ``NUMBA_CACHE_DIR`` or the
user's cache; loading the cache still costs about 7 s a session). So the test session runs the same
source interpreted: :func:`interpreted` switches numba's JIT off while ranx is imported and run,
and ``@njit`` then returns the plain Python functions (numba's typed containers become lists and
dicts). Same definitions, same code paths, no compilation.

The compiled tool itself is checked by the ``slow`` test in ``test_retrieval_crosscheck.py``, which
runs this module as a script in a fresh interpreter: ``python -m tests.engine.ranx_reference``
reads ``[[qrels, run], ...]`` as JSON on stdin and writes the compiled ranx's per-query scores as
JSON on stdout.
"""

from __future__ import annotations

import importlib
import json
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

#: Always at least two metrics (ranx takes another path for one) and 4-character ids, as in the
#: strategies: compiled ranx recompiles for a longer id.
RANX_METRICS = ["ndcg@5", "ndcg_burges@5", "precision@5", "recall@5", "mrr"]


@contextmanager
def interpreted() -> Iterator[None]:
    """Run numba-decorated code as plain Python inside the block (for modules imported inside it)."""
    from numba.core import config

    before = config.DISABLE_JIT
    config.DISABLE_JIT = True
    try:
        yield
    finally:
        config.DISABLE_JIT = before


def _evaluate(qrels: dict, run: dict) -> dict[str, np.ndarray]:
    from ranx import Qrels, Run, evaluate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(Qrels(qrels), Run(run), RANX_METRICS, return_mean=False, make_comparable=True)


def is_interpreted() -> bool:
    """Whether ranx's metric functions in this interpreter are plain Python (not numba dispatchers)."""
    module = importlib.import_module("ranx.metrics.ndcg")  # (``ranx.metrics.ndcg`` is also a function)
    return not hasattr(module._ndcg, "py_func")


def evaluate(qrels: dict, run: dict) -> dict[str, np.ndarray]:
    """Per-query ranx scores (arrays in the order of the sorted query ids).

    ranx is imported and run interpreted, unless this interpreter already imported it compiled
    (then it runs compiled: the same numbers, after the compilation).
    """
    if "ranx" not in sys.modules:
        with interpreted():
            import ranx  # noqa: F401  (imported with the JIT off: @njit leaves the functions as Python)
    if is_interpreted():
        with interpreted():  # numba's typed containers too must stay plain lists and dicts
            return _evaluate(qrels, run)
    return _evaluate(qrels, run)


def main() -> None:
    """Evaluate every ``[qrels, run]`` pair read from stdin with compiled ranx; print the scores."""
    import ranx  # noqa: F401  (compiled: imported with numba's JIT on)

    pairs = json.load(sys.stdin)
    out = [{name: values.tolist() for name, values in _evaluate(qrels, run).items()} for qrels, run in pairs]
    json.dump({"interpreted": is_interpreted(), "scores": out}, sys.stdout)


if __name__ == "__main__":
    main()
