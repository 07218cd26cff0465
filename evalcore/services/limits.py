"""The limits every input is read within, whichever door it came through (files, forms, API bodies).

A limit is checked before the input can take memory or time in proportion to its excess: a line
is read at most ``line_bytes`` long, a Parquet file's decompressed size is read from its metadata
before a page is decoded, a JSON value's nesting is measured as it is parsed. Each limit is a
setting read from the environment (``IMPORT_MAX_*``, see the README); a refusal names the limit
and its variable, so whoever hits it knows what to change.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver


@dataclass(frozen=True)
class Limits:
    """The input limits in force (see :func:`limits`)."""

    depth: int  # nesting of JSON values (objects and arrays)
    field_chars: int  # characters in one text field (a question, a context, an answer, a rationale)
    claims: int  # claims in one row
    rows: int  # records in one file
    line_bytes: int  # bytes in one line of a text file (a JSON Lines record, a CSV line)
    decompressed_bytes: int  # a Parquet file's data once decompressed
    problems: int  # problems reported for one file before the import stops looking

    def message(self, what: str, limit: str) -> str:
        """``what`` (the excess, in words) followed by the limit and the variable that sets it."""
        value, variable, unit = _LIMITS[limit]
        return f"{what}; the limit is {getattr(self, value):,}{unit} ({variable})"


#: limit name -> (attribute, environment variable, unit)
_LIMITS = {
    "depth": ("depth", "IMPORT_MAX_DEPTH", " levels"),
    "field_chars": ("field_chars", "IMPORT_MAX_FIELD_CHARS", " characters"),
    "claims": ("claims", "IMPORT_MAX_CLAIMS", " claims"),
    "rows": ("rows", "IMPORT_MAX_ROWS", " records"),
    "line_bytes": ("line_bytes", "IMPORT_MAX_LINE_BYTES", " bytes"),
    "decompressed_bytes": ("decompressed_bytes", "IMPORT_MAX_DECOMPRESSED_BYTES", " bytes"),
}


@cache
def limits() -> Limits:
    """The limits of the current settings, read once (an import checks every field against them).

    Cached until a setting changes (tests override them), so a check costs a dictionary lookup,
    not seven reads of the lazy settings object.
    """
    return Limits(
        depth=settings.IMPORT_MAX_DEPTH,
        field_chars=settings.IMPORT_MAX_FIELD_CHARS,
        claims=settings.IMPORT_MAX_CLAIMS,
        rows=settings.IMPORT_MAX_ROWS,
        line_bytes=settings.IMPORT_MAX_LINE_BYTES,
        decompressed_bytes=settings.IMPORT_MAX_DECOMPRESSED_BYTES,
        problems=settings.IMPORT_MAX_PROBLEMS,
    )


@receiver(setting_changed)
def _forget_limits(**kwargs: object) -> None:
    limits.cache_clear()
