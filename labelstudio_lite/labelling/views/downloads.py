"""File downloads: the content type by format, and the file name the browser saves."""

from __future__ import annotations

from collections.abc import Iterable

from django.http import HttpResponse, StreamingHttpResponse

CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
    "chat": "application/x-ndjson; charset=utf-8",
    "openai": "application/x-ndjson; charset=utf-8",
    "langfuse": "application/x-ndjson; charset=utf-8",
    "dspy": "application/json; charset=utf-8",
}


def attachment(content: str | Iterable[str], *, fmt: str, filename: str) -> HttpResponse:
    """A download of ``content``: a whole text, or lines streamed as they are made."""
    kind = HttpResponse if isinstance(content, str) else StreamingHttpResponse
    response = kind(content, content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
