"""Gold labelled as documents or character spans, matched to chunks at scoring time.

Gold tied to chunk ids goes stale the moment a team re-chunks. Gold given as a document, or as
a character span of a document, survives any chunking: it is matched to the chunks of each run
when the run is scored.

Overlap rule
    Spans and chunks are half-open character ranges ``[start, end)`` within one document. A chunk
    matches a gold span when they share at least ``min_overlap`` characters (default 1: any
    overlap). A gold entry with no ``start``/``end`` covers the whole document.

Grade of a chunk
    The highest grade among the gold spans it matches (a chunk that holds a grade-3 passage is a
    grade-3 result, however much else it holds). A chunk matching only grade-0 spans is judged
    but not relevant.

With document-level gold and chunk-level retrieval, map each retrieved chunk to its document
instead (:meth:`ChunkMap.documents`): a document retrieved twice counts once, at its first rank.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import check_grade, check_positive_int


@dataclass(frozen=True)
class Span:
    """A gold passage: a document, optionally a character range in it, and its grade.

    Parameters
    ----------
    doc : str
        The document's id.
    grade : float, default 1.0
        Graded relevance of the passage (above 0 means relevant).
    start, end : int, optional
        The half-open character range ``[start, end)``; both None (the default) for the whole
        document.

    Examples
    --------
    >>> Span("doc", 2, 150, 250).whole_document, Span.coerce({"doc": "doc"}).whole_document
    (False, True)
    """

    doc: str
    grade: float = 1.0
    start: int | None = None
    end: int | None = None

    def __post_init__(self) -> None:
        for name in ("start", "end"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
                raise ValueError(f"span of {self.doc!r}: {name} must be an integer offset or None, got {value!r}")
        if (self.start is None) != (self.end is None):
            raise ValueError(f"span of {self.doc!r}: give both start and end, or neither for the whole document")
        if self.start is not None and not (0 <= self.start < self.end):  # type: ignore[operator]
            raise ValueError(f"span of {self.doc!r}: need 0 <= start < end, got start={self.start}, end={self.end}")

    @property
    def whole_document(self) -> bool:
        """Whether the span covers its whole document (no character range)."""
        return self.start is None

    @classmethod
    def coerce(cls, value: Any) -> Span:
        """Return ``value`` as a Span: a Span, a mapping with doc (grade, start, end) or a 4-tuple.

        Parameters
        ----------
        value : Span, mapping or (doc, start, end, grade)
            One gold entry as stored or uploaded.

        Returns
        -------
        Span
        """
        if isinstance(value, Span):
            return value
        if isinstance(value, Mapping):
            doc = value.get("doc")
            if doc is None:
                raise ValueError(f"gold span {dict(value)!r} has no 'doc'")
            grade = check_grade(value.get("grade", 1), doc, "gold")
            return cls(str(doc), grade, value.get("start"), value.get("end"))
        if isinstance(value, (tuple, list)) and len(value) == 4:
            doc, start, end, grade = value
            return cls(str(doc), check_grade(grade, doc, "gold"), start, end)
        raise ValueError(
            f"a gold span is a mapping with doc, grade, start, end or a (doc, start, end, grade) tuple, got {value!r}"
        )


@dataclass(frozen=True)
class Chunk:
    """A chunk of a document as it was indexed for one run: ``[start, end)`` characters.

    Parameters
    ----------
    chunk_id : str
        The chunk's id, as the run's retrieved lists name it.
    doc : str
        The document it was cut from.
    start, end : int
        Its half-open character range in the document.

    Examples
    --------
    >>> Chunk("c1", "doc", 0, 100)
    Chunk(chunk_id='c1', doc='doc', start=0, end=100)
    """

    chunk_id: str
    doc: str
    start: int
    end: int


class ChunkMap:
    """The chunks of a run's index, looked up by document.

    Build it once per run (it sorts each document's chunks by start) and reuse it for every
    question.

    Parameters
    ----------
    chunks : iterable of Chunk, mapping or (chunk_id, doc, start, end)
        The run's chunks; a mapping has ``chunk_id`` (or ``id``), ``doc``, ``start`` and ``end``.

    Examples
    --------
    >>> chunk_map = ChunkMap([("c1", "doc", 0, 100), ("c2", "doc", 100, 200)])
    >>> len(chunk_map), chunk_map.documents(["c2", "c1"]), chunk_map.chunk_grades([("doc", 90, 110, 2)])
    (2, ['doc', 'doc'], {'c1': 2.0, 'c2': 2.0})
    """

    def __init__(self, chunks: Iterable[Chunk | tuple | Mapping]) -> None:
        by_doc: dict[str, list[tuple[int, int, str]]] = {}
        doc_of: dict[str, str] = {}
        for raw in chunks:
            chunk = self._coerce(raw)
            if chunk.chunk_id in doc_of:
                raise ValueError(f"chunk id {chunk.chunk_id!r} appears twice in the chunk map")
            doc_of[chunk.chunk_id] = chunk.doc
            by_doc.setdefault(chunk.doc, []).append((chunk.start, chunk.end, chunk.chunk_id))
        self._doc_of = doc_of
        self._by_doc: dict[str, tuple[np.ndarray, np.ndarray, list[str]]] = {}
        for doc, items in by_doc.items():
            items.sort()
            self._by_doc[doc] = (
                np.array([s for s, _, _ in items], dtype=np.int64),
                np.array([e for _, e, _ in items], dtype=np.int64),
                [c for _, _, c in items],
            )

    @staticmethod
    def _coerce(raw: Chunk | tuple | Mapping) -> Chunk:
        if isinstance(raw, Chunk):
            chunk = raw
        elif isinstance(raw, Mapping):
            try:
                chunk = Chunk(
                    str(raw["chunk_id"] if "chunk_id" in raw else raw["id"]), str(raw["doc"]), raw["start"], raw["end"]
                )
            except KeyError as error:
                raise ValueError(
                    f"chunk {dict(raw)!r} is missing {error.args[0]!r} (need id, doc, start, end)"
                ) from None
        elif isinstance(raw, (tuple, list)) and len(raw) == 4:
            chunk = Chunk(str(raw[0]), str(raw[1]), raw[2], raw[3])
        else:
            raise ValueError(f"a chunk is (chunk_id, doc, start, end), got {raw!r}")
        for name in ("start", "end"):
            value = getattr(chunk, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"chunk {chunk.chunk_id!r}: {name} must be an integer offset, got {value!r}")
        if not 0 <= chunk.start < chunk.end:
            raise ValueError(f"chunk {chunk.chunk_id!r}: need 0 <= start < end, got {chunk.start}, {chunk.end}")
        return chunk

    def __len__(self) -> int:
        return len(self._doc_of)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._doc_of

    def doc_of(self, chunk_id: str) -> str:
        """Return the document a chunk was cut from (ValueError for an unknown chunk)."""
        try:
            return self._doc_of[chunk_id]
        except KeyError:
            raise ValueError(f"chunk {chunk_id!r} is not in the chunk map; upload the chunk map of this run") from None

    def documents(self, ranked_chunks: Sequence[str]) -> list[str]:
        """Return the document of each retrieved chunk, in rank order (repeats kept)."""
        return [self.doc_of(c) for c in ranked_chunks]

    def chunk_grades(self, spans: Iterable[Span | Mapping | tuple], *, min_overlap: int = 1) -> dict[str, float]:
        """Return ``{chunk_id: grade}`` for every chunk that matches a gold span (see module doc)."""
        min_overlap = check_positive_int(min_overlap, "min_overlap")
        grades: dict[str, float] = {}
        for raw in spans:
            span = Span.coerce(raw)
            entry = self._by_doc.get(span.doc)
            if entry is None:
                continue
            starts, ends, ids = entry
            if span.whole_document:
                matched = np.arange(len(ids))
            else:
                # chunks that start before the span ends and end after it starts
                upto = int(np.searchsorted(starts, span.end, side="left"))
                overlap = np.minimum(ends[:upto], span.end) - np.maximum(starts[:upto], span.start)  # type: ignore[arg-type]
                matched = np.flatnonzero(overlap >= min_overlap)
            for i in matched.tolist():
                chunk_id = ids[i]
                if chunk_id not in grades or span.grade > grades[chunk_id]:
                    grades[chunk_id] = span.grade
        return grades


def map_spans_to_chunks(
    spans: Iterable[Span | Mapping | tuple],
    chunks: ChunkMap | Iterable[Chunk | tuple | Mapping],
    *,
    min_overlap: int = 1,
) -> dict[str, float]:
    """Return the chunk-level gold ``{chunk_id: grade}`` of one question's gold spans.

    Parameters
    ----------
    spans : iterable of Span, mapping or (doc, start, end, grade)
        The question's gold; ``start``/``end`` of None means the whole document.
    chunks : ChunkMap or iterable of Chunk, mapping or (chunk_id, doc, start, end)
        The run's chunks. Pass a :class:`ChunkMap` when scoring many questions.
    min_overlap : int, default 1
        Characters a chunk must share with a span to match it.

    Returns
    -------
    dict of chunk_id -> float
        Every chunk that matches a span, with the highest grade among the spans it matches.

    Examples
    --------
    >>> chunks = [("c1", "doc", 0, 100), ("c2", "doc", 100, 200), ("c3", "doc", 200, 300)]
    >>> map_spans_to_chunks([("doc", 150, 250, 2), ("doc", 190, 210, 3)], chunks)
    {'c2': 3.0, 'c3': 3.0}
    """
    chunk_map = chunks if isinstance(chunks, ChunkMap) else ChunkMap(chunks)
    return chunk_map.chunk_grades(spans, min_overlap=min_overlap)
