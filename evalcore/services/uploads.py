"""Uploaded files go to the shared storage (Django's storage API) so that a worker on any host can read them.

The storage is ``STORAGES["default"]``: a folder under MEDIA_ROOT by default, S3-compatible object
storage (django-storages) when ``STORAGE_S3_BUCKET`` is set. A job's parameters name a stored upload
as ``stored:uploads/<32 hex>/<file name>`` (:data:`STORED`); the job, when it runs, reads it through
:func:`local_files` (the file itself on a local folder, a streamed temporary copy otherwise, always
removed). A refused, failed or finished job deletes its uploads (:func:`discard_uploads_of`);
``manage.py cleanup_uploads`` deletes what a lost process left behind (see docs/deploy.md).

A command line in the embedded mode passes local paths as they are; with a broker it stores the
files first (:func:`store_local_files`), since the worker may be on another host.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.utils import timezone

from .problems import ImportFailed, ImportProblem, UserFacingError

STORED = "stored:"
UPLOADS = "uploads"
_STORED_NAME = re.compile(r"uploads/[0-9a-f]{32}/[^/]+")


def _safe_name(name: str) -> str:
    stem, suffix = Path(name).stem, Path(name).suffix
    # a long name keeps its extension: the format is told from it
    return (re.sub(r"[^A-Za-z0-9._-]", "_", stem)[:100] + re.sub(r"[^A-Za-z0-9.]", "_", suffix)[:20]) or "upload"


def _store(content: File, name: str) -> str:
    """Save ``content`` (read in chunks, never whole) under its own folder; return its reference."""
    stored = default_storage.save(f"{UPLOADS}/{uuid.uuid4().hex}/{_safe_name(name)}", content)
    return STORED + stored


def check_file_size(name: str, size: int) -> None:
    """Refuse a file over ``UPLOAD_MAX_BYTES``, whichever door it came through (an upload, a command line):
    the same limit bounds the shared storage the job reads it from, and what a job is allowed to take on."""
    if size > settings.UPLOAD_MAX_BYTES:
        raise ImportFailed(
            [
                ImportProblem(
                    name,
                    None,
                    None,
                    f"the file is {size:,} bytes; the limit is {settings.UPLOAD_MAX_BYTES:,} (UPLOAD_MAX_BYTES)",
                )
            ]
        )


def save_upload(upload: File) -> str:
    """Store an upload in the shared storage and return its reference; refuse files over UPLOAD_MAX_BYTES."""
    name = Path(upload.name or "upload").name
    if upload.size is not None:
        check_file_size(name, upload.size)
    return _store(upload, name)


def uploads_root() -> Path:
    return Path(settings.MEDIA_ROOT) / UPLOADS


def is_stored(value: object) -> bool:
    return isinstance(value, str) and value.startswith(STORED) and bool(_STORED_NAME.fullmatch(value[len(STORED) :]))


def upload_exists(value: str) -> bool:
    """Whether the file a job parameter names is there: a stored upload, or a local file (the embedded CLI)."""
    if is_stored(value):
        return default_storage.exists(value[len(STORED) :])
    return Path(value).is_file()


@contextlib.contextmanager
def local_file(value: str) -> Iterator[Path]:
    """A local path to read the file ``value`` names: the stored file itself when the storage is a local
    folder, else a temporary copy streamed from the storage (removed on the way out, whatever happened)."""
    if not is_stored(value):
        yield Path(value)
        return
    name = value[len(STORED) :]
    if _has_local_path(name):
        yield Path(default_storage.path(name))
        return
    folder = Path(tempfile.mkdtemp(prefix="lsl-upload-", dir=settings.FILE_UPLOAD_TEMP_DIR))
    try:
        copy = folder / Path(name).name  # the same name: the format is told from its extension
        try:
            with default_storage.open(name, "rb") as source, copy.open("wb") as target:
                shutil.copyfileobj(source, target, 1024 * 1024)
        except Exception as error:  # boto's, a network share's: whatever the storage raises, said in words
            raise _unreadable(name, error) from None
        yield copy
    finally:
        shutil.rmtree(folder, ignore_errors=True)


#: Parquet keeps its schema at the end of the file: format detection needs all of it.
_WHOLE_FOR_DETECTION = (".parquet", ".pq")


@contextlib.contextmanager
def local_head(value: str) -> Iterator[Path]:
    """A local path to what format detection reads of the file ``value`` names: the file itself where it is
    local, else its first ``IMPORT_MAX_LINE_BYTES`` and a little more (a first line, or the start of a JSON
    document), fetched with one ranged read from object storage instead of the whole upload (a Parquet file,
    whose schema is at its end, is fetched whole)."""
    name = value[len(STORED) :] if is_stored(value) else ""
    if not name or Path(name).suffix.lower() in _WHOLE_FOR_DETECTION or _has_local_path(name):
        with local_file(value) as path:
            yield path
        return
    wanted = settings.IMPORT_MAX_LINE_BYTES + (1 << 16)
    folder = Path(tempfile.mkdtemp(prefix="lsl-head-", dir=settings.FILE_UPLOAD_TEMP_DIR))
    try:
        head = folder / Path(name).name
        try:
            head.write_bytes(_first_bytes(name, wanted))
        except Exception as error:
            raise _unreadable(name, error) from None
        yield head
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _has_local_path(name: str) -> bool:
    """Whether the storage is a local folder (object storage has no path)."""
    try:
        default_storage.path(name)
    except NotImplementedError:
        return False
    return True


def _first_bytes(name: str, count: int) -> bytes:
    """The first ``count`` bytes of stored file ``name``: one ranged GET on S3 (django-storages reads a whole
    object before its first byte), the storage's own reader elsewhere."""
    storage = default_storage._wrapped if hasattr(default_storage, "_wrapped") else default_storage
    bucket, normalize = getattr(storage, "bucket", None), getattr(storage, "_normalize_name", None)
    if bucket is not None and normalize is not None:
        from storages.utils import clean_name

        try:
            answer = bucket.Object(normalize(clean_name(name))).get(Range=f"bytes=0-{count - 1}")
        except Exception as error:
            if getattr(error, "response", {}).get("Error", {}).get("Code") == "InvalidRange":
                return b""  # an empty file has no first byte to range over
            raise
        return answer["Body"].read()
    with default_storage.open(name, "rb") as handle:
        return handle.read(count)


class StorageUnavailable(UserFacingError):
    """The shared file storage did not give a stored upload back (an object store or network share away)."""


def _unreadable(name: str, error: Exception) -> UserFacingError:
    """What to tell the user when reading stored upload ``name`` failed with ``error``."""
    response = getattr(error, "response", None)
    status = str((response or {}).get("Error", {}).get("Code", "")) if isinstance(response, dict) else ""
    if isinstance(error, FileNotFoundError) or status in ("404", "NoSuchKey"):
        return ImportFailed(
            [
                ImportProblem(
                    Path(name).name, None, None, "the uploaded file is no longer in the storage; upload it again"
                )
            ]
        )
    return StorageUnavailable(
        f"The file storage could not be read, so nothing was imported ({type(error).__name__}: "
        f"{' '.join(str(error).split())[:300]}). Try again once /readyz reports the storage as ok; if it lasts, the "
        f"operator checks the storage settings (STORAGE_S3_*) and the network."
    )


def _file_fields(params: Any) -> list[str]:
    """The parameters that name files: ``path`` and ``*_path``."""
    return [f.name for f in dataclasses.fields(params) if f.name == "path" or f.name.endswith("_path")]


@contextlib.contextmanager
def local_files(params: Any) -> Iterator[Any]:
    """``params`` (a job's parameters dataclass) with every stored upload replaced by a local path to read."""
    if not dataclasses.is_dataclass(params) or isinstance(params, type):
        yield params
        return
    with contextlib.ExitStack() as stack:
        changes = {
            name: str(stack.enter_context(local_file(getattr(params, name))))
            for name in _file_fields(params)
            if is_stored(getattr(params, name))
        }
        yield dataclasses.replace(params, **changes) if changes else params


def store_local_files(params: Any) -> Any:
    """``params`` with every local file it names stored in the shared storage (a command line whose job runs
    on a worker, perhaps on another host: the worker gets the file, not a path it cannot read)."""
    changes = {}
    for name in _file_fields(params):
        value = getattr(params, name)
        if value and not is_stored(value):
            with open(value, "rb") as handle:
                changes[name] = _store(File(handle, name=Path(value).name), Path(value).name)
    return dataclasses.replace(params, **changes) if changes else params


def discard_upload(path: str | Path | None) -> bool:
    """Delete an upload that :func:`save_upload` stored; any other path is left alone."""
    if not path:
        return False
    value = str(path)
    if is_stored(value):
        name = value[len(STORED) :]
        try:
            default_storage.delete(name)
        except Exception:  # the storage being away must not hide the job's own outcome; cleanup_uploads retries
            return False
        with contextlib.suppress(NotImplementedError, OSError):
            Path(default_storage.path(name)).parent.rmdir()  # a local folder: its now empty folder too
        return True
    file = Path(value)  # a local path under MEDIA_ROOT/uploads/ (jobs from before the storage API)
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


def stored_uploads() -> Iterator[tuple[str, datetime | None]]:
    """Every stored upload (its reference) with when it was stored, where the storage can tell."""
    try:
        folders, _ = default_storage.listdir(UPLOADS)
    except (FileNotFoundError, NotADirectoryError):
        return
    for folder in folders:
        _, files = default_storage.listdir(f"{UPLOADS}/{folder}")
        for file in files:
            name = f"{UPLOADS}/{folder}/{file}"
            try:
                when = default_storage.get_modified_time(name)
            except (NotImplementedError, OSError):
                when = None
            yield STORED + name, when


def uploads_cleanup(*, older_than: timedelta, in_use: set[str], dry_run: bool = False) -> list[str]:
    """Delete the stored uploads older than ``older_than`` that no queued or running job names (``in_use``),
    and upload temporary files left in FILE_UPLOAD_TEMP_DIR by killed requests; return what was deleted."""
    cutoff = timezone.now() - older_than
    deleted = []
    for reference, when in list(stored_uploads()):
        if reference in in_use or when is None or when > cutoff:
            continue
        deleted.append(reference)
        if not dry_run:
            discard_upload(reference)
    if not dry_run:  # empty folders of a local storage
        with contextlib.suppress(OSError):
            for folder in uploads_root().iterdir():
                with contextlib.suppress(OSError):
                    folder.rmdir()
    temp = Path(settings.FILE_UPLOAD_TEMP_DIR)
    if temp.is_dir():
        for leftover in temp.iterdir():
            stat = leftover.stat()
            if datetime.fromtimestamp(stat.st_mtime, tz=cutoff.tzinfo) <= cutoff:
                deleted.append(str(leftover))
                if not dry_run:
                    if leftover.is_dir():
                        shutil.rmtree(leftover, ignore_errors=True)
                    else:
                        leftover.unlink(missing_ok=True)
    return deleted


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
