"""A temporary on-disk book of an eval set import's question ids, so that its memory does not grow with the file.

A 1,000,000-question file's ids, lines and hashes held in Python sets, dicts and lists took about 680 MB at
the import's peak. The book keeps them in a private temporary SQLite database (the standard library's
``sqlite3``; the file is deleted when the book is closed, whatever the project's database is), whose page
cache is capped at :data:`CACHE_KIB`: the rest lives on disk. It answers what the import asks of every
question, in file order:

* whether an id (after NFC normalisation, compared by ``casefold``) was seen before, and on which line, so
  that a duplicate or an id differing only by case is refused naming both lines;
* whether the base version of an extension holds the id, with which content hash, or one differing only by
  case;

and, once the file was read, streams the version's ``(qid, question hash)`` pairs in id order for the content
hash (SQLite's ``BINARY`` order of UTF-8 text is code point order, Python's order of ``str``) and the new
questions in file order for the write pass.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from types import TracebackType

#: The most memory the book's page cache takes, in KiB (SQLite's sorter spills to temporary files beyond it).
CACHE_KIB = 16 * 1024


def scratch_database() -> sqlite3.Connection:
    """A private temporary SQLite database (deleted when closed) whose page cache is capped at :data:`CACHE_KIB`,
    in one transaction never committed: scratch space for a reader that must not hold a file in memory."""
    db = sqlite3.connect("", isolation_level=None)  # "": a private temporary file, deleted on close
    for pragma in (f"cache_size = -{CACHE_KIB}", "temp_store = FILE", "journal_mode = OFF", "synchronous = OFF"):
        db.execute(f"PRAGMA {pragma}")
    db.execute("BEGIN")  # one transaction, never committed: the database is thrown away
    return db


class IdBook:
    """The ids seen in a file (with their lines and, for new questions, their hashes) and a base version's ids."""

    def __init__(self) -> None:
        self._db = scratch_database()
        # ids: one row per record taken from the file, rowid = its place among them (1, 2, ...)
        self._db.execute("CREATE TABLE ids (folded TEXT NOT NULL UNIQUE, qid TEXT NOT NULL, line INTEGER, hash TEXT)")
        self._db.execute("CREATE TABLE base (qid TEXT PRIMARY KEY, folded TEXT NOT NULL, hash TEXT NOT NULL)")
        self._db.execute("CREATE INDEX base_folded ON base (folded)")
        self.records = 0  # the records taken from the file
        self.new_count = 0  # of which new questions of the version
        self.base_count = 0

    def __enter__(self) -> IdBook:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None):
        self.close()

    def close(self) -> None:
        self._db.close()

    def seen(self, qid: str, line: int) -> tuple[str, int] | None:
        """Record ``qid`` as read on ``line`` and return None; or, when an id of the same casefold was recorded
        before, return that id and its line (and record nothing)."""
        folded = qid.casefold()
        cursor = self._db.execute(
            "INSERT INTO ids (folded, qid, line) VALUES (?, ?, ?) ON CONFLICT (folded) DO NOTHING", (folded, qid, line)
        )
        if cursor.rowcount == 1:
            self.records += 1
            return None
        return self._db.execute("SELECT qid, line FROM ids WHERE folded = ?", (folded,)).fetchone()

    def keep(self, qid: str, qhash: str) -> None:
        """Mark the recorded ``qid`` as a new question of the version, with its content hash."""
        self._db.execute("UPDATE ids SET hash = ? WHERE folded = ?", (qhash, qid.casefold()))
        self.new_count += 1

    def add_base(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Record the base version's questions as ``(qid, question hash)`` pairs."""
        before = self._db.total_changes
        self._db.executemany(
            "INSERT INTO base (qid, folded, hash) VALUES (?, ?, ?)", ((q, q.casefold(), h) for q, h in pairs)
        )
        self.base_count += self._db.total_changes - before

    def base_hash(self, qid: str) -> str | None:
        """The hash of the base version's question ``qid``, or None when it has none of that id."""
        row = self._db.execute("SELECT hash FROM base WHERE qid = ?", (qid,)).fetchone()
        return row[0] if row else None

    def base_alike(self, qid: str) -> str | None:
        """The base version's id that has the casefold of ``qid`` (the last one recorded), if any."""
        row = self._db.execute(
            "SELECT qid FROM base WHERE folded = ? ORDER BY rowid DESC LIMIT 1", (qid.casefold(),)
        ).fetchone()
        return row[0] if row else None

    def pairs_by_id(self) -> Iterator[tuple[str, str]]:
        """The version's ``(qid, question hash)`` pairs, the new questions' and the base's, in id order."""
        return self._db.execute(
            "SELECT qid, hash FROM ids WHERE hash IS NOT NULL UNION ALL SELECT qid, hash FROM base ORDER BY 1"
        )

    def new_questions(self) -> Iterator[tuple[int, str, str]]:
        """The new questions as ``(place among the records taken, qid, question hash)``, in file order."""
        return self._db.execute("SELECT rowid, qid, hash FROM ids WHERE hash IS NOT NULL ORDER BY rowid")
