"""Uploaded files are saved under MEDIA_ROOT/uploads/ so that a worker can read them later.

Each upload gets a folder of its own; an import that is refused or fails deletes its uploads
(:func:`discard_uploads_of`), so only the files of accepted and finished imports stay.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import uuid
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

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
    folder = uploads_root() / uuid.uuid4().hex
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / safe
    with path.open("wb") as handle:
        for chunk in upload.chunks():
            handle.write(chunk)
    return path


def uploads_root() -> Path:
    return Path(settings.MEDIA_ROOT) / "uploads"


def discard_upload(path: str | Path | None) -> bool:
    """Delete an upload that :func:`save_upload` saved (its folder); any other path is left alone."""
    if not path:
        return False
    file = Path(path)
    try:
        folder = file.resolve().parent
        saved_here = folder.parent == uploads_root().resolve() and re.fullmatch(r"[0-9a-f]{32}", folder.name)
    except OSError:
        return False
    if not saved_here:
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return True


def discard_uploads_of(params: Any) -> None:
    """Delete the uploads a job's parameters (a dataclass) point to."""
    if dataclasses.is_dataclass(params) and not isinstance(params, type):
        for value in dataclasses.asdict(params).values():
            if isinstance(value, str) and value:
                discard_upload(value)


Request = TypeVar("Request", bound=Callable[..., Any])


def discarding_uploads(request: Request) -> Request:
    """Wrap a job's request function: when it refuses the job, the uploads its parameters point to are deleted."""

    @wraps(request)
    def wrapper(*, params: Any, **kwargs: Any) -> Any:
        try:
            return request(params=params, **kwargs)
        except BaseException:
            discard_uploads_of(params)
            raise

    return wrapper  # type: ignore[return-value]
