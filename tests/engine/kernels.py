"""Run the batch scorer on a chosen kernel.

``score_encoded`` has a dense kernel (questions as columns of small matrices, used when list lengths
are similar, which is every small generated batch) and a flat ``bincount`` kernel (used otherwise),
both in ``evalcore.engine._kernels``. Both must give the same numbers, so the batch tests run on each:
``flat_kernel()`` switches the dense one off for the duration of a ``with`` block. (Tests that call
the kernels directly are in ``test_kernels.py``.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from evalcore.engine import _kernels

KERNELS = ("default", "flat")


@contextmanager
def flat_kernel() -> Iterator[None]:
    original = _kernels._score_dense
    _kernels._score_dense = lambda *args, **kwargs: None
    try:
        yield
    finally:
        _kernels._score_dense = original


@contextmanager
def kernel(name: str) -> Iterator[None]:
    if name == "flat":
        with flat_kernel():
            yield
    else:
        yield
