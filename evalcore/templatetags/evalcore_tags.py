"""Number formatting for pages: every figure with its interval and n, NaN shown as a dash."""

from __future__ import annotations

import json
import math
from typing import Any

from django import template
from django.utils.html import format_html

register = template.Library()


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@register.filter
def num(value: Any, digits: int = 3) -> str:
    return f"{value:.{int(digits)}f}" if _finite(value) else "—"


@register.filter
def signed(value: Any, digits: int = 3) -> str:
    return f"{value:+.{int(digits)}f}" if _finite(value) else "—"


@register.filter
def pct(value: Any, digits: int = 0) -> str:
    return f"{100 * value:.{int(digits)}f} %" if _finite(value) else "—"


@register.filter
def pvalue(value: Any) -> str:
    """A p-value as the tables print it: three decimals, or powers of ten below 0.001 (a dash when not tested)."""
    if not _finite(value):
        return "—"
    return f"{value:.3f}" if value >= 0.001 else f"{value:.0e}"


@register.filter
def get(mapping: Any, key: Any) -> Any:
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None


@register.simple_tag
def interval(low: Any, high: Any, signed_values: bool = False) -> str:
    if not (_finite(low) and _finite(high)):
        return "—"
    spec = "+.3f" if signed_values else ".3f"
    return f"[{low:{spec}}, {high:{spec}}]"


@register.simple_tag
def status_badge(status: str) -> str:
    return format_html('<span class="badge status-{}">{}</span>', status, status)


@register.filter
def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def _pass_fail(words: Any) -> tuple[str | None, str | None]:
    """The pass and fail words of a label set (a report's ``label_set`` dict) or of a campaign."""
    if isinstance(words, dict):
        return words.get("pass"), words.get("fail")
    return getattr(words, "pass_word", None), getattr(words, "fail_word", None)


@register.filter
def verdict_word(value: Any, words: Any) -> Any:
    """A stored verdict or label ("supported", "unsupported", "cant_tell") in the campaign's words (its label set's
    pass and fail words, or the campaign's); a score or anything else as it is."""
    passed, failed = _pass_fail(words)
    word = (
        {"supported": passed, "unsupported": failed, "cant_tell": "can't tell"}.get(value)
        if isinstance(value, str)
        else None
    )
    return word.lower() if word else value


@register.filter
def stratum_words(value: Any, words: Any) -> Any:
    """A stored stratum name ("billing · judge supported") with the judge's verdict in the campaign's words."""
    if not isinstance(value, str):
        return value
    for stored in ("unsupported", "supported"):
        suffix = f" · judge {stored}"
        if value.endswith(suffix):
            return f"{value[: -len(suffix)]} · judge {verdict_word(stored, words)}"
    return value
