"""CSV that is safe to open in a spreadsheet (OWASP's rule against CSV injection).

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is run as a formula
by Excel, LibreOffice and Google Sheets (``=HYPERLINK(...)`` in an annotator's rationale becomes a
link that leaks data). Every text cell we write that starts so gets a leading apostrophe, which
spreadsheets show as text and do not display; numbers are written as numbers. Our CSV readers drop
that apostrophe again (see :mod:`.readers`), so an export imports back unchanged.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(value: Any) -> Any:
    """The value as a cell no spreadsheet runs as a formula: text that starts like one gets a leading apostrophe."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class SafeDictWriter(csv.DictWriter):
    """:class:`csv.DictWriter` whose text cells are :func:`spreadsheet_cell` safe (the header too)."""

    def __init__(self, handle: TextIO, fieldnames: Sequence[str], **kwargs: Any) -> None:
        super().__init__(handle, fieldnames=fieldnames, **kwargs)

    def writeheader(self) -> Any:
        return self.writer.writerow([spreadsheet_cell(name) for name in self.fieldnames])

    def writerow(self, rowdict: Mapping[str, Any]) -> Any:
        return super().writerow({key: spreadsheet_cell(value) for key, value in rowdict.items()})

    def writerows(self, rowdicts: Iterable[Mapping[str, Any]]) -> None:
        for row in rowdicts:
            self.writerow(row)
