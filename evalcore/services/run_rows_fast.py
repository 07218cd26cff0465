"""The fast path of :func:`~.run_rows.normalize_row` for the rows most files hold: plain JSON values, ASCII ids.

An import spends most of its time validating rows one field at a time (profiled on a 100,000-row run: more than
reading, scoring and writing them together). Most rows are plain: the row's own fields only, ids that are short
ASCII strings, texts within the limits, claims of ``text`` and ``supported``, scores that are numbers. For those
:func:`plain_row` checks each field with a few C-level operations (a ``join`` refuses anything that is not
text, ``map(len, ...)`` bounds the lengths) and builds the same row :func:`~.run_rows.normalize_row` would.

Anything else (an id with spaces around it, a CSV cell that holds a list, a blank chunk, an integer id, a
metadata field, a value out of the limits, any mistake at all) gives None: the row then takes the full path,
which accepts it or names its field and says what is wrong, in the same words as ever. So this path never
refuses a row and never accepts one the full path would refuse; tests hold it to that.
"""

from __future__ import annotations

from typing import Any

from .fields import encodable
from .limits import limits

#: The fields a plain row may have (any other is kept as metadata: the full path does that).
PLAIN_FIELDS = frozenset({"id", "retrieved", "context_ids", "context", "answer", "declined", "claims", "scores"})
_CLAIM_FIELDS = frozenset({"text", "supported", "rationale"})
#: Formats whose records are the row's own fields, unadapted (a tool's format is adapted first: full path).
PLAIN_FORMATS = frozenset({"jsonl", "json", "csv", "parquet"})


def plain_row(data: dict[str, Any], field_chars: int, max_claims: int) -> dict[str, Any] | None:
    """The row :func:`~.run_rows.normalize_row` gives for ``data``, when it is plain; else None."""
    if not PLAIN_FIELDS.issuperset(data):
        return None
    qid = data.get("id")
    if type(qid) is not str or not 0 < len(qid) <= 200 or not qid.isascii() or "\x00" in qid or qid.isspace():
        return None
    if qid[0] <= " " or qid[-1] <= " ":
        return None  # spaces (or control characters) around it: the full path strips them
    raw_retrieved = data.get("retrieved")
    retrieved = [] if raw_retrieved is None else _ids(raw_retrieved, field_chars)
    raw_ids = data.get("context_ids")
    context_ids = None if raw_ids is None else _ids(raw_ids, field_chars)
    context, chunks = _context(data.get("context"), field_chars)
    answer = _text(data.get("answer"), field_chars)
    declined = data.get("declined", False)
    if declined is None:
        declined = False
    claims = _claims(data.get("claims"), field_chars, max_claims)
    scores = _scores(data.get("scores"))
    if (
        retrieved is None
        or (context_ids is None and raw_ids is not None)
        or context is None
        or answer is None
        or type(declined) is not bool
        or claims is None
        or scores is None
    ):
        return None
    return {
        "qid": qid,
        "chunks_are_k": False,
        "retrieved": retrieved,
        "context_ids": context_ids,
        "context": context,
        "context_chunks": chunks,
        "answer": answer,
        "declined": declined,
        "claims": claims,
        "scores": scores,
        "metadata": {},
    }


def plain_rows_enabled(fmt: str) -> bool:
    """Whether rows of this format may take the fast path (a tool's records are adapted first: they may not)."""
    return fmt in PLAIN_FORMATS


def plain_limits() -> tuple[int, int]:
    """The limits :func:`plain_row` checks: a field's characters and a row's claims."""
    limit = limits()
    return limit.field_chars, limit.claims


def _ids(items: Any, field_chars: int) -> list[str] | None:
    """A list of non-blank ASCII ids within the limit, as it is; None for anything else."""
    if type(items) is not list:
        return None
    if not items:
        return items
    try:
        joined = "".join(items)
    except TypeError:
        return None  # an item that is not text
    if not joined.isascii() or "\x00" in joined:
        return None
    if min(map(len, items)) == 0 or max(map(len, items)) > field_chars or any(map(str.isspace, items)):
        return None
    return items


def _text(value: Any, field_chars: int) -> str | None:
    """A text field as the full path gives it ("" when absent or blank); None when the full path must look."""
    if value is None:
        return ""
    if type(value) is not str or len(value) > field_chars or "\x00" in value or not encodable(value):
        return None
    return "" if value.isspace() else value


def _context(raw: Any, field_chars: int) -> tuple[str | None, list[str] | None]:
    """The context and its chunks (a list of texts), as the full path gives them; (None, None) to look again."""
    if type(raw) is list:
        if not raw:
            return "", []
        try:
            joined = "\n\n".join(raw)
        except TypeError:
            return None, None
        if "\x00" in joined or max(map(len, raw)) > field_chars or any(map(str.isspace, raw)) or not encodable(joined):
            return None, None
        return joined, raw
    if type(raw) is str and raw.lstrip()[:1] == "[":
        return None, None  # a list written as text: the full path reads it
    return _text(raw, field_chars), None


def _claims(raw: Any, field_chars: int, max_claims: int) -> list[dict[str, Any]] | None:
    """Claims of non-blank text and a boolean verdict (and a rationale), rebuilt as the full path builds them."""
    if raw is None:
        return []
    if type(raw) is not list or len(raw) > max_claims:
        return None
    claims = []
    for item in raw:
        if type(item) is not dict or not _CLAIM_FIELDS.issuperset(item):
            return None
        text = item.get("text")
        supported = item.get("supported")
        if type(text) is not str or type(supported) is not bool or not text or text.isspace():
            return None
        if len(text) > field_chars or "\x00" in text or not encodable(text):
            return None
        rationale = item.get("rationale")
        if rationale is None:
            claims.append({"text": text, "supported": supported})
            continue
        rationale = _text(rationale, field_chars)
        if rationale is None:
            return None
        claims.append({"text": text, "supported": supported, "rationale": rationale} if rationale else
                      {"text": text, "supported": supported})  # fmt: skip
    return claims


def _scores(raw: Any) -> dict[str, float | None] | None:
    """Scores named by short, clean names with finite numbers or null, as floats; None for anything else."""
    if raw is None:
        return {}
    if type(raw) is not dict:
        return None
    out: dict[str, float | None] = {}
    for name, value in raw.items():
        if not 0 < len(name) <= 100 or "\x00" in name or name.strip() != name:
            return None  # blank, long or padded names: the full path strips or refuses them
        kind = type(value)
        if kind is float:
            if value - value != 0.0:
                return None  # NaN or infinite
        elif kind is int:
            if not -(2**53) <= value <= 2**53:
                return None
            value = float(value)
        elif value is not None:
            return None
        out[name] = value
    return out
