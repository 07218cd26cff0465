"""An import's reads of committed data on a second PostgreSQL connection, ahead of the rows that need them.

A run import writes its rows with ``COPY`` on its own connection (see :mod:`.bulk_copy`); every other query
on that connection waits for the ``COPY`` in flight. Profiled on a 50,000-row run, the main thread spent
about 15 % of its time so: each batch's question lookup (about 18 ms of the server's time for 2,000 ids)
and its row ids from the sequence, one after the other, each after the last ``COPY``. The version's
questions are committed and frozen, and a sequence is outside transactions, so both can be read on a
second connection: the questions of the next batch are looked up in a thread while this one is checked,
scored and written.

Only when the import's caller holds no transaction (:func:`side_reads_possible`): inside one (a test case,
a caller's ``atomic``), the questions may not be committed, and every read stays on the main connection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any, TypeVar

import psycopg
from django.db import connection

T = TypeVar("T")
R = TypeVar("R")


def side_reads_possible() -> bool:
    """Whether a second connection sees what this one has written: PostgreSQL, and no transaction open here."""
    return connection.vendor == "postgresql" and not connection.in_atomic_block


class SideReads:
    """A second connection (autocommit, the project's settings) and one thread to read on it; a context manager.

    Its errors reach the caller as Django's (``django.db.OperationalError`` and so on), as the main
    connection's do, so that a database outage fails or retries the import for the same reason.
    """

    def __init__(self) -> None:
        self.raw: psycopg.Connection[Any] | None = None
        self._executor: ThreadPoolExecutor | None = None

    def __enter__(self) -> SideReads:
        params = connection.get_connection_params()
        with connection.wrap_database_errors:
            self.raw = psycopg.connect(**params, autocommit=True)
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="lsl-side-reads")
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
        if self.raw is not None:
            self.raw.close()

    def run(self, read: Callable[[psycopg.Connection[Any]], R]) -> R:
        """``read(connection)`` here and now (psycopg serialises a connection's users)."""
        assert self.raw is not None, "run() inside the with block"
        with connection.wrap_database_errors:
            return read(self.raw)

    def ahead(self, batches: Iterable[T], read: Callable[[psycopg.Connection[Any], T], R]) -> Iterator[tuple[T, R]]:
        """Each batch with ``read(connection, batch)``, the read of a batch running in the thread while the next
        batch is taken from ``batches`` and while the caller works on the one before."""
        assert self._executor is not None, "ahead() inside the with block"
        pending: tuple[T, Future[R]] | None = None
        for batch in batches:
            started = (batch, self._executor.submit(read, self.raw, batch))  # type: ignore[arg-type]
            if pending is not None:
                yield pending[0], self._result(pending[1])
            pending = started
        if pending is not None:
            yield pending[0], self._result(pending[1])

    @staticmethod
    def _result(future: Future[R]) -> R:
        with connection.wrap_database_errors:
            return future.result()
