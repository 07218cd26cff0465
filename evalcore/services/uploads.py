"""Uploaded files are saved under MEDIA_ROOT/uploads/ so that a worker can read them later."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from .problems import ImportFailed, ImportProblem


def save_upload(upload: UploadedFile) -> Path:
    """Save an upload to its own folder and return its path; refuse files over UPLOAD_MAX_BYTES."""
    name = Path(upload.name or "upload").name
    if upload.size is not None and upload.size > settings.UPLOAD_MAX_BYTES:
        raise ImportFailed(
            [
                ImportProblem(
                    name,
                    None,
                    None,
                    f"the file is {upload.size:,} bytes; the limit is {settings.UPLOAD_MAX_BYTES:,} (UPLOAD_MAX_BYTES)",
                )
            ]
        )
    stem, suffix = Path(name).stem, Path(name).suffix
    # a long name keeps its extension: the format is told from it
    safe = (re.sub(r"[^A-Za-z0-9._-]", "_", stem)[:100] + re.sub(r"[^A-Za-z0-9.]", "_", suffix)[:20]) or "upload"
    folder = Path(settings.MEDIA_ROOT) / "uploads" / uuid.uuid4().hex
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / safe
    with path.open("wb") as handle:
        for chunk in upload.chunks():
            handle.write(chunk)
    return path
