"""A comparison's changed rows in order, kept in the database so any page of the list reads only its own block.

The order of the changes on a metric (largest |delta| first, ties by question id) depends only on the two
runs, which are frozen, so it is computed once from their score tables, the first time a page beyond what the
comparison kept is asked for, and kept here: a header (how many changed, the block size) and fixed-size blocks
of entries (see :mod:`evalcore.services.changed_order`). Both are written in one transaction and never change;
they go only with their comparison (CASCADE).
"""

from __future__ import annotations

from typing import Any

from django.db import models

from .evalsets import FrozenError
from .gates import Comparison
from .runs import FrozenRunQuerySet

#: The directions a changed-rows list has: every change, drops only, rises only.
DIRECTIONS = ("all", "down", "up")
ORDER_FROZEN = "a kept changed-rows order never changes and goes only with its comparison"


class FrozenOrderQuerySet(FrozenRunQuerySet):
    """Kept orders and their blocks are never updated, nor deleted but by deleting their comparison."""

    frozen_message = ORDER_FROZEN


class _Frozen(models.Model):
    objects = FrozenOrderQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise FrozenError(ORDER_FROZEN)
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise FrozenError(ORDER_FROZEN)


class ChangedRowsOrder(_Frozen):
    """The header of one kept order: which list (comparison, metric, direction), how long, in blocks of how many.

    Unique per list, so two first requests building it at once keep one (the second's insert fails and it
    reads the first's).
    """

    comparison = models.ForeignKey(Comparison, on_delete=models.CASCADE, related_name="changed_orders")
    metric = models.CharField(max_length=100)
    direction = models.CharField(max_length=4, choices=[(d, d) for d in DIRECTIONS])
    count = models.PositiveIntegerField(help_text="How many questions changed on the metric in the direction.")
    block_size = models.PositiveIntegerField(help_text="Entries a block (the last may hold fewer).")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["comparison", "metric", "direction"], name="changed_order_one_per_list"),
            models.CheckConstraint(condition=models.Q(direction__in=list(DIRECTIONS)), name="changed_order_direction"),
            models.CheckConstraint(condition=models.Q(block_size__gt=0), name="changed_order_block_size"),
        ]

    def __str__(self) -> str:
        return f"changes of comparison {self.comparison_id} on {self.metric} ({self.direction})"


class ChangedRowsBlock(_Frozen):
    """Entries ``block * block_size`` onwards of a kept order, as packed records (base row id, candidate row id,
    base score, candidate score, delta: int64 and exact float64)."""

    order = models.ForeignKey(ChangedRowsOrder, on_delete=models.CASCADE, related_name="blocks")
    block = models.PositiveIntegerField()
    data = models.BinaryField(
        help_text="Little-endian records: base_row i8, candidate_row i8, base, candidate, delta f8."
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["order", "block"], name="changed_block_one_per_position")]

    def __str__(self) -> str:
        return f"block {self.block} of order {self.order_id}"
