"""The skeleton every import follows: validate everything first, write in one transaction, and
treat a repeated import as a no-op.

1. Validate: stream the file once and check every record (:func:`validated`), collecting problems
   with file, line and field; nothing is written while anything is wrong.
2. Decide: when the content is already stored, say so and write nothing.
3. Write: stream the file again inside one transaction (:func:`create_once`); if a concurrent
   import of the same content won the race, return what it wrote instead of failing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import orjson
from django.db import IntegrityError, connection, models, transaction

from .fields import FieldError
from .problems import ImportFailed, ImportProblem, ProblemCollector, UserFacingError
from .readers import Record

T = TypeVar("T")

#: A progress callback: ``(done, total or None, message)``.
Progress = Callable[[int, int | None, str], None]


def no_progress(done: int, total: int | None, message: str) -> None:
    """The progress callback that reports nothing: the default where no one follows the work."""
    return None


def about_file(display: str, check: Callable[[], T]) -> T:
    """Run a check of the import's options; its refusal becomes a problem that names the file."""
    try:
        return check()
    except ImportFailed:
        raise
    except UserFacingError as error:
        raise ImportFailed([ImportProblem(display, None, None, str(error))]) from None


#: Records an id read on a line and returns None, or returns the earlier id of the same casefold and its line.
Seen = Callable[[str, int], tuple[str, int] | None]


def validated(
    records: Iterable[Record],
    normalize: Callable[[dict[str, Any]], T],
    problems: ProblemCollector,
    *,
    key: Callable[[T], str],
    duplicate: Callable[[str, int], str],
    seen: Seen | None = None,
) -> Iterator[tuple[int, T]]:
    """Yield ``(line, value)`` for each record that ``normalize`` accepts and whose key is new.

    A :class:`FieldError` from ``normalize`` becomes a problem on the record's line; a repeated
    key becomes a problem on field ``id`` with ``duplicate(key, first_line)`` as its message, and a key
    that differs from an earlier one only by case is refused naming both lines. ``seen`` keeps the keys
    (by default a dict in memory; an import of any size passes an on-disk book, :class:`.id_book.IdBook`).
    Stops once the collector is full (the import then reports the first problems only).
    """
    seen = seen or seen_in_memory()
    for record in records:
        if problems.full:
            problems.truncated = True
            return
        try:
            value = normalize(record.data)
        except FieldError as error:
            problems.add(record.line, error.field, error.message)
            continue
        name = key(value)
        earlier = seen(name, record.line)
        if earlier is not None:
            other, line = earlier
            if other == name:
                problems.add(record.line, "id", duplicate(name, line))
            else:
                problems.add(record.line, "id", case_collision(name, record.line, other, line))
            continue
        yield record.line, value


def seen_in_memory() -> Seen:
    """Keep ids in a dict by casefold (Q1 and q1 look like one question): the line, with the id when it is not
    its casefold."""
    book: dict[str, int | tuple[str, int]] = {}

    def seen(name: str, line: int) -> tuple[str, int] | None:
        folded = name.casefold()
        earlier = book.get(folded)
        if earlier is not None:
            return (folded, earlier) if isinstance(earlier, int) else earlier
        book[folded] = line if name == folded else (name, line)
        return None

    return seen


def case_collision(name: str, line: int, other: str, other_line: int) -> str:
    """Say that two ids differ only by case (ids are compared after NFC normalisation, and exactly)."""
    return (
        f"id {name!r} on line {line} differs only by case from {other!r} on line {other_line}: ids that differ only "
        "by case look like one question; rename one of them"
    )


def create_once(
    create: Callable[[], T],
    *,
    existing: Callable[[], T | None],
    taken: Callable[[], BaseException | None] = lambda: None,
) -> tuple[T, bool]:
    """Run ``create`` in one transaction; return ``(object, True)``.

    When the database refuses it because a concurrent import stored the same thing first (a
    unique constraint), return ``(existing(), False)`` instead; when a concurrent import took the
    name with different content, raise what ``taken()`` returns (the message a later import would
    get); any other refusal is raised.
    """
    try:
        with transaction.atomic():
            return create(), True
    except IntegrityError:
        found = existing()
        if found is not None:
            return found, False
        refusal = taken()
        if refusal is None:
            raise
        raise refusal from None


def in_batches(values: Iterable[T], size: int) -> Iterator[list[T]]:
    """Yield lists of at most ``size`` values (the writes go in bulk, memory stays flat)."""
    batch: list[T] = []
    for value in values:
        batch.append(value)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def insert_values(model: type[models.Model], fields: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """Insert rows given as tuples of field values in bulk; return how many.

    PostgreSQL takes them with ``COPY ... FROM STDIN`` (psycopg's ``cursor.copy``), its bulk-load path:
    several times the rows a second of an ``INSERT`` per row, however pipelined. SQLite gets one
    ``executemany`` of a prepared ``INSERT``. ``bulk_create`` builds every model instance and compiles
    every value through the ORM, which cost more than parsing and scoring an imported row put together
    (profiled on a 100,000-row run); here only JSON fields are encoded (orjson, with the standard
    library for what it refuses). No signals are sent (``bulk_create`` sends none either); the caller's
    transaction holds the writes.
    """
    meta = model._meta
    columns = [meta.get_field(name) for name in fields]
    quote = connection.ops.quote_name
    names = ", ".join(quote(c.column) for c in columns)
    json_at = [(i, c.encoder) for i, c in enumerate(columns) if isinstance(c, models.JSONField)]
    params = []
    for row in rows:
        values = list(row)
        for i, encoder in json_at:
            values[i] = json_text(values[i], encoder)
        params.append(values)
    if not params:
        return 0
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {quote(meta.db_table)} ({names}) FROM STDIN") as copy:
                for values in params:
                    copy.write_row(values)
        else:
            placeholders = ", ".join(["%s"] * len(columns))
            cursor.executemany(f"INSERT INTO {quote(meta.db_table)} ({names}) VALUES ({placeholders})", params)
    return len(params)


def allocate_ids(model: type[models.Model], count: int) -> list[int] | None:
    """On PostgreSQL, ``count`` new primary keys of ``model`` from its sequence, so that rows written with ``COPY``
    are known by their ids without reading them back; None elsewhere (SQLite reads them back by their range: its
    ids only grow while the import's transaction holds the write lock).

    The sequence is named as a literal in the second query: named by ``pg_get_serial_sequence`` in the query
    itself, it was looked up again for every id (68 ms for 20,000 ids instead of 7)."""
    if connection.vendor != "postgresql" or count == 0:
        return None
    table = model._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_serial_sequence(%s, %s)", [table, model._meta.pk.column])
        (sequence,) = cursor.fetchone()
        literal = "'" + sequence.replace("'", "''") + "'"
        cursor.execute(f"SELECT nextval({literal}::regclass) FROM generate_series(1, %s)", [count])
        return [pk for (pk,) in cursor.fetchall()]


@contextmanager
def foreign_keys_checked_as_written(model: type[models.Model]) -> Iterator[None]:
    """On PostgreSQL, check ``model``'s foreign keys (deferred to the commit, as Django makes them) at the end of
    each statement inside the block, then defer them again.

    A run import's ``COPY`` is sent from a thread while the next batch is scored (see :mod:`.bulk_copy`): checked
    there, its rows' keys are checked in parallel with that work; deferred, the two checks a row waited for the
    commit, alone (12 % of a 300,000-row import's time, profiled). What is checked is the same."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'f' AND condeferred",
            [model._meta.db_table],
        )
        names = ", ".join(connection.ops.quote_name(name) for (name,) in cursor.fetchall())
    if not names:
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute(f"SET CONSTRAINTS {names} IMMEDIATE")
    yield
    with connection.cursor() as cursor:
        cursor.execute(f"SET CONSTRAINTS {names} DEFERRED")


def json_text(value: Any, encoder: type[json.JSONEncoder] | None = None) -> str:
    """``value`` as JSON text for a JSON column: orjson when it can (several times faster), else ``json``."""
    if encoder is None:
        try:
            return orjson.dumps(value).decode()
        except (TypeError, orjson.JSONEncodeError):
            pass  # an integer beyond 64 bits, a key that is not text: the standard library writes them
    return json.dumps(value, cls=encoder)


def refresh_statistics(*models_written: type[models.Model]) -> None:
    """Let PostgreSQL's planner see rows just written in bulk (``ANALYZE``), as its manual advises after a load.

    Until autovacuum gets to it, the planner believes a new run's 100,000 rows are a few dozen and
    sorts them all for the rows page's first 50 (0.6 s) instead of walking the question index (8 ms).
    Only the key columns (primary and foreign keys, short fields) are analyzed: the planner's choices
    here depend on them alone, and sampling the wide ones (a run's contexts, answers and claims,
    1-3 KB a row, stored out of line) made the ``ANALYZE`` the largest fixed cost of an import
    (about 2 s, more on a big table). SQLite plans these queries well without statistics.
    """
    if connection.vendor != "postgresql":
        return
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for model in models_written:
            keys = [f.column for f in model._meta.concrete_fields if f.primary_key or f.is_relation]
            keys += [f.column for f in model._meta.concrete_fields if isinstance(f, models.CharField)]
            cursor.execute(
                f"ANALYZE {quote(model._meta.db_table)} ({', '.join(quote(c) for c in dict.fromkeys(keys))})"
            )
