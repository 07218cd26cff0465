"""Gold spans matched to chunks at scoring time: the overlap rule, grades, and malformed input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.engine import Chunk, ChunkMap, Span, map_spans_to_chunks, ndcg_at_k, recall_at_k

CHUNKS = [("c1", "doc", 0, 100), ("c2", "doc", 100, 200), ("c3", "doc", 200, 300), ("o1", "other", 0, 50)]


def test_doc_example_maps_two_spans_to_two_chunks_with_the_higher_grade():
    chunks = [("c1", "doc", 0, 100), ("c2", "doc", 100, 200), ("c3", "doc", 200, 300)]
    assert map_spans_to_chunks([("doc", 150, 250, 2), ("doc", 190, 210, 3)], chunks) == {"c2": 3.0, "c3": 3.0}


def test_ranges_are_half_open_so_touching_ranges_do_not_overlap():
    assert map_spans_to_chunks([("doc", 100, 200, 1)], CHUNKS) == {"c2": 1.0}
    assert map_spans_to_chunks([("doc", 50, 100, 1)], CHUNKS) == {"c1": 1.0}


def test_a_single_shared_character_is_enough_by_default():
    assert map_spans_to_chunks([("doc", 99, 101, 1)], CHUNKS) == {"c1": 1.0, "c2": 1.0}
    assert map_spans_to_chunks([("doc", 199, 200, 2)], CHUNKS) == {"c2": 2.0}


def test_min_overlap_requires_that_many_shared_characters():
    spans = [("doc", 95, 130, 1)]  # 5 characters of c1, 30 of c2
    assert map_spans_to_chunks(spans, CHUNKS, min_overlap=5) == {"c1": 1.0, "c2": 1.0}
    assert map_spans_to_chunks(spans, CHUNKS, min_overlap=6) == {"c2": 1.0}
    assert map_spans_to_chunks(spans, CHUNKS, min_overlap=31) == {}


def test_a_chunk_takes_the_highest_grade_among_the_spans_it_matches_in_any_order():
    spans = [("doc", 10, 20, 3), ("doc", 30, 40, 1), ("doc", 50, 60, 2)]
    assert map_spans_to_chunks(spans, CHUNKS) == {"c1": 3.0}
    assert map_spans_to_chunks(spans[::-1], CHUNKS) == {"c1": 3.0}


def test_a_whole_document_span_matches_every_chunk_of_that_document_only():
    assert map_spans_to_chunks([{"doc": "doc", "grade": 2}], CHUNKS) == {"c1": 2.0, "c2": 2.0, "c3": 2.0}
    assert map_spans_to_chunks([Span("other")], CHUNKS) == {"o1": 1.0}


def test_a_span_of_a_document_missing_from_the_index_matches_nothing():
    assert map_spans_to_chunks([("missing", 0, 10, 1), Span("missing")], CHUNKS) == {}


def test_spans_of_one_document_never_match_chunks_of_another():
    assert map_spans_to_chunks([("other", 10, 20, 1)], CHUNKS) == {"o1": 1.0}


def test_a_chunk_matching_only_grade_zero_spans_is_judged_but_not_relevant():
    grades = map_spans_to_chunks([("doc", 10, 20, 0), ("doc", 150, 160, 2)], CHUNKS)
    assert grades == {"c1": 0.0, "c2": 2.0}
    assert recall_at_k(["c1"], grades, 1) == 0.0
    assert recall_at_k(["c1", "c2"], grades, 2) == 1.0


def test_span_mappings_and_span_objects_are_equivalent():
    as_mapping = map_spans_to_chunks([{"doc": "doc", "start": 150, "end": 250, "grade": 2}], CHUNKS)
    as_object = map_spans_to_chunks([Span("doc", 2, 150, 250)], CHUNKS)
    as_tuple = map_spans_to_chunks([("doc", 150, 250, 2)], CHUNKS)
    assert as_mapping == as_object == as_tuple == {"c2": 2.0, "c3": 2.0}


def test_a_span_mapping_without_grade_means_grade_one():
    assert map_spans_to_chunks([{"doc": "doc", "start": 0, "end": 5}], CHUNKS) == {"c1": 1.0}


def test_chunk_objects_mappings_and_tuples_build_the_same_map():
    objects = ChunkMap([Chunk("c1", "doc", 0, 100), Chunk("c2", "doc", 100, 200)])
    mappings = ChunkMap(
        [{"id": "c1", "doc": "doc", "start": 0, "end": 100}, {"chunk_id": "c2", "doc": "doc", "start": 100, "end": 200}]
    )
    spans = [("doc", 90, 110, 1)]
    assert objects.chunk_grades(spans) == mappings.chunk_grades(spans) == {"c1": 1.0, "c2": 1.0}


def test_chunk_map_sorts_chunks_given_in_any_order():
    shuffled = [CHUNKS[2], CHUNKS[0], CHUNKS[3], CHUNKS[1]]
    spans = [("doc", 90, 210, 1)]
    assert (
        map_spans_to_chunks(spans, shuffled) == map_spans_to_chunks(spans, CHUNKS) == {"c1": 1.0, "c2": 1.0, "c3": 1.0}
    )


def test_overlapping_chunks_are_each_matched():
    chunks = [("a", "doc", 0, 100), ("b", "doc", 50, 150), ("c", "doc", 120, 200)]
    assert map_spans_to_chunks([("doc", 60, 70, 1)], chunks) == {"a": 1.0, "b": 1.0}


def test_chunk_map_answers_lookups():
    chunk_map = ChunkMap(CHUNKS)
    assert len(chunk_map) == 4
    assert "c2" in chunk_map and "zz" not in chunk_map
    assert chunk_map.doc_of("o1") == "other"


def test_documents_maps_retrieved_chunks_to_their_documents_in_rank_order_keeping_repeats():
    chunk_map = ChunkMap(CHUNKS)
    assert chunk_map.documents(["c3", "o1", "c1"]) == ["doc", "other", "doc"]
    assert chunk_map.documents([]) == []


def test_document_level_gold_counts_a_document_retrieved_twice_once_at_its_first_rank():
    chunk_map = ChunkMap(CHUNKS)
    docs = chunk_map.documents(["c3", "c1", "o1"])
    assert recall_at_k(docs, {"doc", "other"}, 2) == 0.5
    assert recall_at_k(docs, {"doc", "other"}, 3) == 1.0
    assert ndcg_at_k(docs, {"other": 1}, 3) == pytest.approx(0.5)  # rank 3: 1 / log2(4)


def test_documents_rejects_a_chunk_missing_from_the_map():
    with pytest.raises(ValueError, match="chunk 'zz' is not in the chunk map"):
        ChunkMap(CHUNKS).documents(["c1", "zz"])


def test_gold_spans_survive_rechunking():
    spans = [("doc", 120, 140, 2)]
    old = map_spans_to_chunks(spans, [("a", "doc", 0, 256), ("b", "doc", 256, 512)])
    new = map_spans_to_chunks(spans, [("x", "doc", 0, 128), ("y", "doc", 128, 256), ("z", "doc", 256, 384)])
    assert old == {"a": 2.0}
    assert new == {"x": 2.0, "y": 2.0}


def test_a_chunk_map_is_reusable_across_questions():
    chunk_map = ChunkMap(CHUNKS)
    assert map_spans_to_chunks([("doc", 0, 10, 1)], chunk_map) == {"c1": 1.0}
    assert map_spans_to_chunks([("other", 0, 10, 2)], chunk_map) == {"o1": 2.0}


# --------------------------------------------------------------------------------------------
# Against a brute-force overlap
# --------------------------------------------------------------------------------------------


@st.composite
def chunks_and_spans(draw):
    chunks = []
    for doc in ("a", "b"):
        for i in range(draw(st.integers(0, 8))):
            start = draw(st.integers(0, 300))
            chunks.append((f"{doc}{i}", doc, start, start + draw(st.integers(1, 80))))
    spans = []
    for _ in range(draw(st.integers(0, 6))):
        doc = draw(st.sampled_from(["a", "b", "c"]))
        grade = draw(st.integers(0, 3))
        if draw(st.booleans()):
            spans.append({"doc": doc, "grade": grade})
        else:
            start = draw(st.integers(0, 350))
            spans.append((doc, start, start + draw(st.integers(1, 60)), grade))
    return chunks, spans, draw(st.integers(1, 10))


def brute_force(chunks, spans, min_overlap):
    grades = {}
    for raw in spans:
        if isinstance(raw, dict):
            doc, start, end, grade = raw["doc"], None, None, raw["grade"]
        else:
            doc, start, end, grade = raw
        for chunk_id, chunk_doc, c_start, c_end in chunks:
            if chunk_doc != doc:
                continue
            if start is not None and min(c_end, end) - max(c_start, start) < min_overlap:
                continue
            grades[chunk_id] = max(grades.get(chunk_id, -1), float(grade))
    return grades


@settings(max_examples=100, deadline=None)
@given(chunks_and_spans())
def test_chunk_grades_equal_a_brute_force_overlap_check(case):
    chunks, spans, min_overlap = case
    assert map_spans_to_chunks(spans, chunks, min_overlap=min_overlap) == brute_force(chunks, spans, min_overlap)


# --------------------------------------------------------------------------------------------
# Malformed input
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chunk", "message"),
    [
        (("c1", "doc", 10, 10), r"chunk 'c1': need 0 <= start < end, got 10, 10"),
        (("c1", "doc", 20, 10), r"chunk 'c1': need 0 <= start < end"),
        (("c1", "doc", -5, 10), r"chunk 'c1': need 0 <= start < end"),
        (("c1", "doc", 1.5, 10), r"chunk 'c1': start must be an integer offset, got 1.5"),
        (("c1", "doc", 0, "10"), r"chunk 'c1': end must be an integer offset"),
        (("c1", "doc", True, 10), r"chunk 'c1': start must be an integer offset"),
        (("c1", "doc", 0), r"a chunk is \(chunk_id, doc, start, end\)"),
        ("c1", r"a chunk is \(chunk_id, doc, start, end\)"),
        ({"id": "c1", "doc": "doc", "start": 0}, r"is missing 'end'"),
        ({"doc": "doc", "start": 0, "end": 5}, r"is missing 'id'"),
    ],
)
def test_a_malformed_chunk_is_rejected_with_a_clear_message(chunk, message):
    with pytest.raises(ValueError, match=message):
        ChunkMap([chunk])


def test_a_chunk_id_used_twice_is_rejected():
    with pytest.raises(ValueError, match="chunk id 'c1' appears twice"):
        ChunkMap([("c1", "doc", 0, 10), ("c1", "other", 0, 10)])


def test_numpy_integer_offsets_are_accepted():
    chunk_map = ChunkMap([("c1", "doc", np.int64(0), np.int64(10))])
    assert chunk_map.chunk_grades([("doc", np.int64(5), np.int64(6), 1)]) == {"c1": 1.0}


@pytest.mark.parametrize(
    ("span", "message"),
    [
        (("doc", 10, 10, 1), r"span of 'doc': need 0 <= start < end, got start=10, end=10"),
        (("doc", -1, 10, 1), r"span of 'doc': need 0 <= start < end"),
        (("doc", 10, None, 1), r"span of 'doc': give both start and end, or neither"),
        ({"doc": "doc", "start": 5}, r"give both start and end"),
        (("doc", "a", "b", 1), r"span of 'doc': start must be an integer offset or None"),
        (("doc", 1.5, 7, 1), r"span of 'doc': start must be an integer offset or None"),
        (("doc", 0, 10, float("nan")), r"gold: the grade of 'doc' must be finite"),
        (("doc", 0, 10, "high"), r"gold: the grade of 'doc' must be a number"),
        ({"doc": "doc", "grade": True}, r"gold: the grade of 'doc' must be a number"),
        ({"start": 0, "end": 5}, r"has no 'doc'"),
        (("doc", 0, 10), r"a gold span is a mapping with doc, grade, start, end"),
        ("doc", r"a gold span is a mapping"),
    ],
)
def test_a_malformed_span_is_rejected_with_a_clear_message(span, message):
    with pytest.raises(ValueError, match=message):
        map_spans_to_chunks([span], CHUNKS)


def test_min_overlap_must_be_a_positive_integer():
    with pytest.raises(ValueError, match="min_overlap must be a positive integer"):
        map_spans_to_chunks([("doc", 0, 10, 1)], CHUNKS, min_overlap=0)
    with pytest.raises(ValueError, match="min_overlap must be an integer"):
        map_spans_to_chunks([("doc", 0, 10, 1)], CHUNKS, min_overlap=1.5)


def test_span_properties():
    assert Span("doc").whole_document
    assert not Span("doc", 1, 0, 5).whole_document
    assert Span.coerce(Span("doc")) == Span("doc")
