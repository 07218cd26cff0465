"""PostgreSQL's bulk load for an import's rows: each batch as one ``COPY ... FROM STDIN`` text payload, sent
from a thread while the import reads, checks and scores the next batch.

Profiled on a 100,000-row run, the import waited for the database about as long as it worked: every
``COPY`` was sent and then waited for while nothing else ran. Here the payload is built in the import's
thread (the text format, each value encoded once: JSON by orjson, no per-row adaptation) and a single
worker thread sends it on the same connection and waits for the server, while the import goes on with the
next batch (the wait releases the GIL). Before any other query on the connection, and before the
import's transaction ends, the batch in flight is waited for (a query wrapper on the connection), so the
connection is never used by two threads at once and a failed ``COPY`` fails the import as it did, with
Django's exception.

A payload can also be held (:meth:`BackgroundCopy.hold`) and sent just after the connection's next query: the
run import looks up the next batch's questions before it scores them, and a ``COPY`` sent before that lookup
made the lookup wait for it (0.97 of the lookups' 1.65 s on 100,000 rows into a database of a million);
sent after it, the ``COPY`` runs while the batch is scored and encoded.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any

import orjson
from django.db import DatabaseError, connection, models

Encoder = Callable[[Any], bytes]

#: Statements that begin or end a transaction or a savepoint: a held payload is sent before them, not after.
_TRANSACTION_CONTROL = ("SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT", "BEGIN", "START", "END", "ABORT")


def _json(value: Any) -> bytes:
    try:
        data = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):  # an integer beyond 64 bits, a key that is not text
        data = json.dumps(value).encode()
    return data.replace(b"\\", b"\\\\") if b"\\" in data else data  # JSON text holds no raw tab or newline


def _text(value: Any) -> bytes:
    if value is None:
        return b"\\N"
    data = str(value).encode()
    if b"\\" in data:
        data = data.replace(b"\\", b"\\\\")
    if b"\n" in data:
        data = data.replace(b"\n", b"\\n")
    if b"\r" in data:
        data = data.replace(b"\r", b"\\r")
    if b"\t" in data:
        data = data.replace(b"\t", b"\\t")
    return data


def _bool(value: Any) -> bytes:
    return b"\\N" if value is None else (b"t" if value else b"f")


def _int(value: Any) -> bytes:
    return b"\\N" if value is None else b"%d" % value


def _encoder(field: models.Field) -> Encoder:
    if isinstance(field, models.JSONField):
        return _json
    if isinstance(field, models.BooleanField):
        return _bool
    if isinstance(field, (models.IntegerField, models.AutoField, models.ForeignKey)):
        return _int
    if isinstance(field, (models.TextField, models.CharField)):
        return _text
    raise TypeError(f"no COPY encoding for {type(field).__name__}")


def copy_statement(model: type[models.Model], fields: Sequence[str]) -> tuple[str, list[Encoder]]:
    """The ``COPY`` statement for these fields of ``model`` and the encoder of each value (text format)."""
    meta = model._meta
    columns = [meta.get_field(name) for name in fields]
    quote = connection.ops.quote_name
    names = ", ".join(quote(c.column) for c in columns)
    return f"COPY {quote(meta.db_table)} ({names}) FROM STDIN", [_encoder(c) for c in columns]


def _json_plain(value: Any) -> bytes:
    data = orjson.dumps(value)  # what orjson refuses fails the whole batch: see copy_payload
    return data.replace(b"\\", b"\\\\") if b"\\" in data else data


def copy_payload(encoders: Sequence[Encoder], rows: Sequence[Sequence[Any]]) -> bytes:
    """The rows in ``COPY``'s text format: one line each, tab-separated, escaped.

    JSON is written by orjson alone, without a fallback per value (a ``try`` a value was a sixth of the
    payload's cost); a batch with a value orjson refuses (an integer beyond 64 bits, a key that is not
    text) is written again with the standard library's fallback for each value."""
    call = operator.call
    fast = [_json_plain if encode is _json else encode for encode in encoders]
    try:
        return b"".join([b"\t".join(map(call, fast, row)) + b"\n" for row in rows])
    except (TypeError, orjson.JSONEncodeError):
        pairs = list(encoders)
        return b"".join([b"\t".join(map(call, pairs, row)) + b"\n" for row in rows])


class BackgroundCopy:
    """Send ``COPY`` payloads from one worker thread while the caller goes on; use as a context manager
    around the import's writes (inside its transaction), on PostgreSQL only."""

    def __init__(self) -> None:
        self._pending: Future[None] | None = None
        self._held: tuple[str, bytes] | None = None
        self._lost = False
        self._executor: ThreadPoolExecutor | None = None
        self._wrapper: Any = None

    def __enter__(self) -> BackgroundCopy:
        connection.ensure_connection()
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="lsl-copy")
        self._wrapper = connection.execute_wrapper(self._before_query)
        self._wrapper.__enter__()
        return self

    def _before_query(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        held, self._held = self._held, None
        if held is not None and sql.lstrip()[:9].upper().startswith(_TRANSACTION_CONTROL):
            self.send(*held)  # before a savepoint begins or ends: the rows stay in the savepoint they were written in
            held = None
        self._wait_in_flight()
        try:
            result = execute(sql, params, many, context)
        except BaseException:
            self._lost = self._lost or held is not None  # cannot be sent before a query that has already failed
            raise
        if held is not None:
            self.send(*held)
        return result

    def send(self, statement: str, payload: bytes) -> None:
        """Send one payload (after the one in flight is done)."""
        self._wait_in_flight()
        assert self._executor is not None, "send() inside the with block"
        self._pending = self._executor.submit(_copy, connection.connection, statement, payload)

    def hold(self, statement: str, payload: bytes) -> None:
        """Send one payload just after the connection's next query (or at :meth:`wait`); a payload already
        held is sent now."""
        earlier, self._held = self._held, None
        if earlier is not None:
            self.send(*earlier)
        self._held = (statement, payload)

    def wait(self) -> None:
        """Send the payload held, if any, and wait for the payload in flight; its error is raised here, as
        Django raises it (and an error if a held payload was lost to a failed query)."""
        held, self._held = self._held, None
        if held is not None:
            self.send(*held)
        self._wait_in_flight()
        if self._lost:
            self._lost = False
            raise DatabaseError(
                "rows waiting to be written (COPY) were not written: the query after them failed; the import must "
                "be rolled back"
            )

    def _wait_in_flight(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            with connection.wrap_database_errors:
                pending.result()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        try:
            if kind is None:
                self.wait()
            else:
                self._held = None  # the caller's error wins: nothing more is sent
                if self._pending is not None:
                    self._pending.exception()  # the connection is free again either way
        finally:
            self._wrapper.__exit__(kind, error, trace)
            assert self._executor is not None
            self._executor.shutdown(wait=True)


def _copy(raw: Any, statement: str, payload: bytes) -> None:
    with raw.cursor() as cursor, cursor.copy(statement) as copy:
        copy.write(payload)
