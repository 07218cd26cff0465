"""Run the batch scorer on a chosen kernel.

``score_encoded`` has a dense kernel (questions as columns of small matrices, used when list lengths
are similar, which is every small generated batch) and a flat ``bincount`` kernel (used otherwise).
Both must give the same numbers, so the batch tests run on each: ``flat_kernel()`` switches the dense
one off for the duration of a ``with`` block (it works whether or not the dense kernel exists).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from evalcore.engine import retrieval

KERNELS = ("default", "flat")


@contextmanager
def flat_kernel() -> Iterator[None]:
    missing = object()
    original = getattr(retrieval, "_score_dense", missing)
    retrieval._score_dense = lambda *args, **kwargs: None
    try:
        yield
    finally:
        if original is missing:
            del retrieval._score_dense
        else:
            retrieval._score_dense = original


@contextmanager
def kernel(name: str) -> Iterator[None]:
    if name == "flat":
        with flat_kernel():
            yield
    else:
        yield
