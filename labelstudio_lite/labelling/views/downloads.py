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
    "label-studio": "application/json; charset=utf-8",
    "json": "application/json; charset=utf-8",
    "html": "text/html; charset=utf-8",
}
#: The file name's extension by format (JSON Lines where not named).
EXTENSIONS = {"csv": "csv", "dspy": "json", "label-studio": "json", "json": "json", "html": "html"}


def attachment(content: str | Iterable[str], *, fmt: str, filename: str) -> HttpResponse:
    """A download of ``content``: a whole text, or lines streamed as they are made."""
    kind = HttpResponse if isinstance(content, str) else StreamingHttpResponse
    response = kind(content, content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
