"""The questions of the eval set version a run answers, looked up a batch of ids at a time.

A run import never holds the whole version (a 1,000,000-question version held whole took about
1 GB): each batch of rows asks for its own questions in one query, the slices' sizes come from one
``GROUP BY``, and the line each question's row was first seen on (to name it in a duplicate's
problem) takes eight bytes a question.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import numpy as np
import orjson
from django.db import connection
from django.db.models import Count, Max, Min

from ..models import EvalSetVersion, Question
from .scoring import QuestionInfo
from .summaries import slice_name

#: Question ids looked up in one query (SQLite takes 999 parameters in a statement).
LOOKUP_BATCH = 900


class QuestionIndex:
    """The eval set version's questions, looked up a batch of ids at a time: memory holds one batch's
    questions, never the whole version (a 1,000,000-question version held whole took about 1 GB)."""

    def __init__(self, version: EvalSetVersion, per_slice: dict[str, int], pk_range: tuple[int, int], count: int):
        self.version = version
        self.per_slice = per_slice
        self.pk_range = pk_range
        self.count = count
        self._by_text: _TextIndex | None = None

    @classmethod
    def load(cls, version: EvalSetVersion) -> QuestionIndex:
        questions = Question.objects.filter(version=version)
        per_slice: dict[str, int] = {}
        for qtype, n in questions.order_by().values_list("qtype").annotate(n=Count("pk")):
            per_slice[slice_name(qtype)] = per_slice.get(slice_name(qtype), 0) + n
        span = questions.order_by().aggregate(low=Min("pk"), high=Max("pk"))
        return cls(version, per_slice, (span["low"] or 0, span["high"] or 0), sum(per_slice.values()))

    def lookup(self, qids: Iterable[str]) -> dict[str, QuestionInfo]:
        """The questions of these ids (unknown ones are absent): one query on PostgreSQL (``qid = ANY(...)``, a
        single parameter), one per 900 ids on SQLite. Plain SQL: the ORM's compiling of 900 parameters a query
        and its building of each result cost more than the database's answer (profiled on a 100,000-row run)."""
        wanted = list(dict.fromkeys(qids))
        if not wanted:
            return {}
        table = connection.ops.quote_name(Question._meta.db_table)
        found: dict[str, QuestionInfo] = {}
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(
                    f"SELECT id, qid, qtype, answerable, gold::text FROM {table} WHERE version_id = %s AND qid = ANY(%s)",
                    [self.version.pk, wanted],
                )
                answers = [cursor.fetchall()]
            else:
                answers = []
                for start in range(0, len(wanted), LOOKUP_BATCH):
                    part = wanted[start : start + LOOKUP_BATCH]
                    marks = ", ".join(["%s"] * len(part))
                    cursor.execute(
                        f"SELECT id, qid, qtype, answerable, gold FROM {table} WHERE version_id = %s AND qid IN ({marks})",
                        [self.version.pk, *part],
                    )
                    answers.append(cursor.fetchall())
        loads = orjson.loads
        for answer in answers:
            for pk, qid, qtype, answerable, gold in answer:
                found[qid] = QuestionInfo(
                    pk, qid, qtype, bool(answerable), loads(gold)
                )  # gold as text: orjson reads it
        return found

    @property
    def by_text(self) -> _TextIndex:
        """Question text -> qid ("" when several questions share the text), loaded only if a row has no id."""
        if self._by_text is None:
            self._by_text = _TextIndex(self.version)
        return self._by_text

    def first_lines(self) -> _FirstLines:
        """A book of the line each question's row was first seen on (a duplicate names it)."""
        return _FirstLines(self.pk_range, self.count)


class _TextIndex(Mapping[str, str]):
    """The version's question texts, read from the database the first time a row is matched by its text."""

    def __init__(self, version: EvalSetVersion) -> None:
        self.version = version
        self._index: dict[str, str] | None = None

    def _loaded(self) -> dict[str, str]:
        if self._index is None:
            index: dict[str, str] = {}
            texts = Question.objects.filter(version=self.version).order_by().values_list("qid", "text")
            for qid, text in texts.iterator(chunk_size=5000):
                key = text.strip()
                index[key] = "" if key in index else qid
            self._index = index
        return self._index

    def __getitem__(self, key: str) -> str:
        return self._loaded()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())


class _FirstLines:
    """Question pk -> the line its row was first seen on, in eight bytes a question (the pks of a version's
    questions are nearly contiguous: they are written in bulk), or a dict when they are not."""

    def __init__(self, pk_range: tuple[int, int], count: int) -> None:
        low, high = pk_range
        self.low = low
        span = high - low + 1
        self.array = np.zeros(span, dtype=np.int64) if 0 < span <= 4 * count + 100_000 else None
        self.other: dict[int, int] = {}

    def get(self, pk: int) -> int:
        if self.array is not None and 0 <= pk - self.low < len(self.array):
            return int(self.array[pk - self.low])
        return self.other.get(pk, 0)

    def set(self, pk: int, line: int) -> None:
        if self.array is not None and 0 <= pk - self.low < len(self.array):
            self.array[pk - self.low] = line
        else:
            self.other[pk] = line


def question_alike(version: EvalSetVersion, qid: str) -> str | None:
    """The version's question id that differs from ``qid`` only by case, if any (named in a row's problem)."""
    folded = qid.casefold()
    candidates = Question.objects.filter(version=version, qid__iexact=qid).values_list("qid", flat=True)[:20]
    return next((other for other in candidates if other.casefold() == folded), None)
