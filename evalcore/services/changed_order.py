"""Keep a changed-rows order in the database, in fixed-size blocks, so a page reads only the block(s) it spans.

The order is computed once (from the score tables, by :class:`evalcore.selectors.ChangedRows`) and
written here in one transaction: a header then every block, or nothing. Two first requests may build
it at once: the header's unique constraint keeps one, and the loser reads the winner's.

Why ``BLOCK`` = 2,000 entries: an entry is 40 bytes, so a block is 80 KB (a few hundred microseconds to
read and decode); it is a multiple of the HTML page (50), so a page never straddles two blocks, and at
least the API's largest page (1,000), so an API page spans at most two; a million changes make 500 blocks.
"""

from __future__ import annotations

import numpy as np
from django.db import IntegrityError, transaction

from ..models import ChangedRowsBlock, ChangedRowsOrder, Comparison

#: Entries a block.
BLOCK = 2000
#: One entry: both rows' ids, both scores and the delta, exact (little-endian so a block reads the same anywhere).
ENTRY = np.dtype(
    [("base_row", "<i8"), ("candidate_row", "<i8"), ("base", "<f8"), ("candidate", "<f8"), ("delta", "<f8")]
)
#: Blocks inserted a statement (4 MB), so a million changes are not one 40 MB statement.
INSERT_BATCH = 50


def pack(order: dict[str, np.ndarray]) -> np.ndarray:
    """The order's columns as one array of entries."""
    entries = np.empty(len(order["delta"]), dtype=ENTRY)
    for name in ENTRY.names:
        entries[name] = order[name]
    return entries


def unpack(blocks: list[bytes]) -> np.ndarray:
    """Entries from consecutive blocks' data."""
    return np.frombuffer(b"".join(bytes(b) for b in blocks), dtype=ENTRY)


def keep_changed_order(
    comparison: Comparison, metric: str, direction: str, order: dict[str, np.ndarray], *, block: int | None = None
) -> ChangedRowsOrder:
    """Store the order of one changed-rows list (header and blocks, in one transaction) and return its header;
    the header another request stored first when it won the race (the order is the same: the runs are frozen)."""
    entries = pack(order)
    block = block or BLOCK
    try:
        with transaction.atomic():
            header = ChangedRowsOrder.objects.create(
                comparison=comparison, metric=metric, direction=direction, count=len(entries), block_size=block
            )
            ChangedRowsBlock.objects.bulk_create(
                (
                    ChangedRowsBlock(order=header, block=k, data=entries[start : start + block].tobytes())
                    for k, start in enumerate(range(0, len(entries), block))
                ),
                batch_size=INSERT_BATCH,
            )
    except IntegrityError:
        header = ChangedRowsOrder.objects.get(comparison=comparison, metric=metric, direction=direction)
    return header
