"""Pages of long lists whose count is known, or not worth its cost.

A run has 100,000 rows: counting the rows a filter keeps (a JSON range over every row) can cost
more than reading the page, so a filtered list is paged without a count (``Next`` while more
rows follow), and an unfiltered one takes its count from what was stored at import.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.db.models import QuerySet


class CountedPaginator(Paginator):
    """A paginator told its count (a run's row count, a comparison's changes), so a page costs one query, not two."""

    def __init__(self, object_list: Any, per_page: int, *, count: int) -> None:
        super().__init__(object_list, per_page)
        self.__dict__["count"] = count


class UncountedPage:
    """One page of a list read one row past the page: whether another follows, without counting them all.

    Offers what ``partials/pager.html`` reads of a Django page (``paginator.count`` is None).
    """

    def __init__(self, queryset: QuerySet, number: int | None, per_page: int) -> None:
        self.number = max(1, number or 1)
        start = (self.number - 1) * per_page
        rows = list(queryset[start : start + per_page + 1])
        self.object_list = rows[:per_page]
        self._more = len(rows) > per_page
        self.paginator = _NoCount()

    def __iter__(self) -> Any:
        return iter(self.object_list)

    def __len__(self) -> int:
        return len(self.object_list)

    def has_next(self) -> bool:
        return self._more

    def has_previous(self) -> bool:
        return self.number > 1

    def has_other_pages(self) -> bool:
        return self._more or self.number > 1

    def next_page_number(self) -> int:
        return self.number + 1

    def previous_page_number(self) -> int:
        return self.number - 1


class _NoCount:
    count = None
    num_pages = None
