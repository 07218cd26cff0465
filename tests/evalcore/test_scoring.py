"""Scoring on import: retrieval metrics at the run's k on what reached the model, gold spans matched
to chunks, unanswerable questions scored on abstention, faithfulness from claims, coverage."""

from __future__ import annotations

import json
import math

import pytest

from evalcore.engine import ChunkMap, map_spans_to_chunks, ndcg_at_k, precision_at_k, recall_at_k, reciprocal_rank
from evalcore.models import Row
from evalcore.services.runs import run_import
from evalcore.services.scoring import faithfulness_of
from tests.factories import QUESTIONS, demo_judge, make_demo_eval_set, make_eval_set, make_run, ok_row
from tests.files import write_jsonl

pytestmark = pytest.mark.django_db


def scores_of(run, qid: str) -> dict:
    return Row.objects.get(run=run, question__qid=qid).scores


def import_run(tmp_path, rows, *, name="r", evalset="support", **kwargs):
    return make_run(folder=tmp_path, rows=rows, evalset=evalset, name=name, **kwargs)


# ---------------------------------------------------------------------------------------------
# k is what reached the model
# ---------------------------------------------------------------------------------------------


def test_retrieval_metrics_count_only_the_chunks_that_reached_the_model(version, tmp_path):
    # q1's gold is d1 (grade 3) and d2 (grade 1); the retriever found both, but only d9 and d1 reached the model
    row = ok_row("q1", retrieved=["d1", "d2", "d9", "d7", "d8"], context_ids=["d9", "d1"])
    run = import_run(tmp_path, [row], k=5)
    scores = scores_of(run, "q1")
    assert scores["recall@5"] == pytest.approx(0.5)  # d2 never reached the model
    assert scores["precision@5"] == pytest.approx(1 / 2)  # k for this row is len(context_ids) = 2
    assert scores["rr"] == pytest.approx(1 / 2)  # d1 is second in what the model saw
    ideal = 7 + 1 / math.log2(3)
    assert scores["ndcg@5"] == pytest.approx((7 / math.log2(3)) / ideal)


def test_without_context_ids_the_run_k_cuts_the_ranking(version, tmp_path):
    row = ok_row("q1", retrieved=["d9", "d1", "d7", "d2"], context_ids=None)
    run = import_run(tmp_path, [row], k=2)
    scores = scores_of(run, "q1")
    assert run.k == 2
    assert scores["recall@2"] == pytest.approx(0.5)
    assert scores["precision@2"] == pytest.approx(0.5)


def test_k_defaults_to_the_most_context_ids_in_a_row(version, tmp_path):
    rows = [ok_row("q1", context_ids=["d1"]), ok_row("q2", context_ids=["d1", "d9", "d3", "d4"])]
    run = import_run(tmp_path, rows)
    assert run.k == 4
    assert "recall@4" in scores_of(run, "q1")


def test_the_ndcg_gain_convention_is_the_runs_choice(version, tmp_path):
    row = ok_row("q1", retrieved=["d2", "d1"], context_ids=["d2", "d1"])
    exponential = scores_of(import_run(tmp_path, [row], name="expo", k=2), "q1")["ndcg@2"]
    linear = scores_of(import_run(tmp_path, [row], name="lin", k=2, gain="linear"), "q1")["ndcg@2"]
    ideal_exp, ideal_lin = 7 + 1 / math.log2(3), 3 + 1 / math.log2(3)
    assert exponential == pytest.approx((1 + 7 / math.log2(3)) / ideal_exp)
    assert linear == pytest.approx((1 + 3 / math.log2(3)) / ideal_lin)
    assert exponential != pytest.approx(linear)


# ---------------------------------------------------------------------------------------------
# Gold spans and chunk maps
# ---------------------------------------------------------------------------------------------

SPAN_QUESTIONS = [
    # the answer sits inside one 256 chunk and one 512 chunk
    {
        "id": "inside",
        "question": "Inside?",
        "type": "span",
        "gold": [{"doc": "doc1", "grade": 2, "start": 300, "end": 400}],
    },
    # the answer crosses the 512 boundary: two chunks either way
    {
        "id": "across",
        "question": "Across?",
        "type": "span",
        "gold": [{"doc": "doc1", "grade": 1, "start": 480, "end": 540}],
    },
    # document-level gold: any chunk of doc2 is a hit
    {"id": "docgold", "question": "Doc?", "type": "doc", "gold": [{"doc": "doc2", "grade": 1}]},
]


def chunk_map_file(tmp_path, size: int):
    chunks = [
        {"id": f"c{size}-{doc}-{i}", "doc": doc, "start": start, "end": start + size}
        for doc in ("doc1", "doc2", "doc3")
        for i, start in enumerate(range(0, 1024, size))
    ]
    return write_jsonl(tmp_path / f"chunks-{size}.jsonl", chunks)


@pytest.fixture
def span_version(db, tmp_path):
    return make_eval_set(folder=tmp_path, questions=SPAN_QUESTIONS, name="spans")


def test_the_same_span_gold_scores_both_a_512_and_a_256_chunking(span_version, tmp_path):
    big = import_run(
        tmp_path,
        [
            {
                "id": "inside",
                "retrieved": ["c512-doc3-0", "c512-doc1-0"],
                "context_ids": ["c512-doc3-0", "c512-doc1-0"],
            },
            {
                "id": "across",
                "retrieved": ["c512-doc1-1", "c512-doc3-1"],
                "context_ids": ["c512-doc1-1", "c512-doc3-1"],
            },
        ],
        name="chunks-512",
        evalset="spans",
        k=2,
        chunks_path=chunk_map_file(tmp_path, 512),
    )
    small = import_run(
        tmp_path,
        [
            {
                "id": "inside",
                "retrieved": ["c256-doc1-1", "c256-doc1-0"],
                "context_ids": ["c256-doc1-1", "c256-doc1-0"],
            },
            {
                "id": "across",
                "retrieved": ["c256-doc1-2", "c256-doc1-1"],
                "context_ids": ["c256-doc1-2", "c256-doc1-1"],
            },
        ],
        name="chunks-256",
        evalset="spans",
        k=2,
        chunks_path=chunk_map_file(tmp_path, 256),
    )
    assert big.has_chunk_map and small.has_chunk_map
    assert big.chunks.count() == 6 and small.chunks.count() == 12
    # inside: one gold chunk either way; the 512 run finds it second, the 256 run first
    assert scores_of(big, "inside")["recall@2"] == 1.0 and scores_of(big, "inside")["rr"] == 0.5
    assert scores_of(small, "inside")["recall@2"] == 1.0 and scores_of(small, "inside")["rr"] == 1.0
    assert scores_of(small, "inside")["precision@2"] == 0.5  # c256-doc1-0 (0-256) does not touch 300-400
    # across: two gold chunks either way; the 512 run has one of them, the 256 run both
    assert scores_of(big, "across")["recall@2"] == 0.5
    assert scores_of(small, "across")["recall@2"] == 1.0 and scores_of(small, "across")["precision@2"] == 1.0


def test_a_chunk_missing_the_span_scores_zero(span_version, tmp_path):
    run = import_run(
        tmp_path,
        [
            {
                "id": "inside",
                "retrieved": ["c256-doc1-0", "c256-doc1-2"],
                "context_ids": ["c256-doc1-0", "c256-doc1-2"],
            },
        ],
        evalset="spans",
        k=2,
        chunks_path=chunk_map_file(tmp_path, 256),
    )
    assert scores_of(run, "inside")["recall@2"] == 0.0 and scores_of(run, "inside")["rr"] == 0.0


def test_document_gold_with_chunk_retrieval_maps_each_chunk_to_its_document(span_version, tmp_path):
    run = import_run(
        tmp_path,
        [
            {
                "id": "docgold",
                "retrieved": ["c256-doc1-0", "c256-doc2-3", "c256-doc3-1"],
                "context_ids": ["c256-doc1-0", "c256-doc2-3", "c256-doc3-1"],
            },
        ],
        evalset="spans",
        k=3,
        chunks_path=chunk_map_file(tmp_path, 256),
    )
    scores = scores_of(run, "docgold")
    assert scores["recall@3"] == 1.0
    assert scores["rr"] == pytest.approx(0.5)
    assert scores["precision@3"] == pytest.approx(1 / 3)


def test_without_a_chunk_map_a_span_counts_for_its_whole_document(span_version, tmp_path):
    run = import_run(
        tmp_path,
        [{"id": "inside", "retrieved": ["doc3", "doc1"], "context_ids": ["doc3", "doc1"]}],
        evalset="spans",
        k=2,
    )
    assert not run.has_chunk_map
    assert scores_of(run, "inside")["recall@2"] == 1.0 and scores_of(run, "inside")["rr"] == 0.5


# ---------------------------------------------------------------------------------------------
# Unanswerable questions, faithfulness and imported judge scores
# ---------------------------------------------------------------------------------------------


def test_unanswerable_questions_get_no_retrieval_scores_and_an_abstention_score(version, tmp_path):
    run = import_run(
        tmp_path,
        [
            ok_row("q4", declined=True, claims=[], answer="I could not find this."),
            ok_row("q1"),
        ],
        k=3,
    )
    unanswerable = scores_of(run, "q4")
    assert [unanswerable[m] for m in ("recall@3", "precision@3", "rr", "ndcg@3")] == [None, None, None, None]
    assert unanswerable["abstention"] == 1.0
    assert unanswerable["faithfulness"] is None
    assert scores_of(run, "q1")["abstention"] is None  # answerable questions are not scored on abstention
    answered = import_run(tmp_path, [ok_row("q4")], name="answered", k=3)
    assert scores_of(answered, "q4")["abstention"] == 0.0


def test_unanswerable_questions_are_left_out_of_retrieval_means(version, tmp_path):
    run = import_run(tmp_path, [ok_row(q["id"]) for q in QUESTIONS], k=3)
    recall = run.summary["slices"]["all"]["metrics"]["recall@3"]
    assert recall["n"] == 4  # q4 is unanswerable
    expected = [scores_of(run, q)["recall@3"] for q in ("q1", "q2", "q3", "q5")]
    assert recall["mean"] == pytest.approx(sum(expected) / 4)
    assert run.summary["slices"]["all"]["metrics"]["abstention"]["n"] == 1


def test_judged_gold_without_a_relevant_document_scores_zero_and_no_gold_no_score_both_counted(
    db, tmp_path, client, django_user_model
):
    questions = [
        {"id": "rel", "question": "Relevant gold?", "gold": [{"doc": "d1", "grade": 2}]},
        {
            "id": "zero",
            "question": "Judged, none relevant?",
            "gold": [{"doc": "d1", "grade": 0}, {"doc": "d2", "grade": 0}],
        },
        {"id": "none", "question": "No gold at all?"},
        {"id": "unans", "question": "Unanswerable?", "answerable": False},
    ]
    make_eval_set(folder=tmp_path, questions=questions, name="zeros")
    rows = [{"id": q["id"], "retrieved": ["d1", "d2"], "context_ids": ["d1", "d2"]} for q in questions]
    result = run_import(path=write_jsonl(tmp_path / "rows.jsonl", rows), evalset="zeros", name="r", k=2)
    run = result.run
    assert [scores_of(run, "zero")[m] for m in ("recall@2", "precision@2", "rr", "ndcg@2")] == [0.0] * 4
    assert scores_of(run, "none")["recall@2"] is None and scores_of(run, "unans")["recall@2"] is None
    recall = run.summary["slices"]["all"]["metrics"]["recall@2"]
    assert (recall["n"], recall["mean"]) == (2, 0.5)  # "zero" is in the mean, as trec_eval keeps it
    assert run.summary["retrieval_gold"] == {"unanswerable": 1, "no_gold": 1, "no_relevant_gold": 1}
    assert "1 with judged gold but no relevant document score 0 on retrieval" in result.message
    assert "1 without gold have no retrieval scores" in result.message
    client.force_login(django_user_model.objects.create_user("o", password="owner-pass-123", role="eval_owner"))
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "1 with judged gold but no relevant document score 0 on retrieval" in page


def test_faithfulness_is_the_fraction_of_supported_claims(version, tmp_path):
    claims = [{"text": f"C{i}.", "supported": supported} for i, supported in enumerate([True, True, False])]
    run = import_run(
        tmp_path,
        [
            ok_row("q1", claims=claims),
            ok_row("q2", claims=[]),
            ok_row("q3", declined=True, claims=[{"text": "Hedged.", "supported": True}]),
            ok_row("q5", claims=[{"text": "All good.", "supported": "yes"}]),
        ],
        k=3,
    )
    assert scores_of(run, "q1")["faithfulness"] == pytest.approx(2 / 3)
    assert scores_of(run, "q2")["faithfulness"] is None  # no claims: undefined, not 0 or 1
    assert scores_of(run, "q3")["faithfulness"] is None  # refusals are scored separately
    assert scores_of(run, "q5")["faithfulness"] == 1.0
    stats = run.summary["slices"]["all"]["metrics"]["faithfulness"]
    assert stats["n"] == 2 and stats["mean"] == pytest.approx((2 / 3 + 1) / 2)


def test_claims_and_verdicts_are_stored_with_the_score(version, tmp_path):
    claims = [
        {"text": "The window is 30 days.", "supported": False, "rationale": "No chunk states this.", "confidence": 0.4}
    ]
    run = import_run(tmp_path, [ok_row("q1", claims=claims)], k=3)
    stored = Row.objects.get(run=run).claims
    assert stored == [
        {
            "text": "The window is 30 days.",
            "supported": False,
            "rationale": "No chunk states this.",
            "metadata": {"confidence": 0.4},
        }
    ]


def test_imported_judge_scores_are_kept_as_imported(version, tmp_path):
    run = import_run(
        tmp_path,
        [
            ok_row("q1", scores={"answer_relevance": 3, "correctness": 0.25}),
            ok_row("q2", claims=[], scores={"faithfulness": 0.8}),
        ],
        k=3,
    )
    assert scores_of(run, "q1")["answer_relevance"] == 3 and scores_of(run, "q1")["correctness"] == 0.25
    assert scores_of(run, "q2")["faithfulness"] == 0.8  # a judge score without its claims is kept
    assert {"answer_relevance", "correctness", "faithfulness"} <= set(run.summary["metrics"])


def test_computed_scores_win_over_imported_ones_and_the_imported_values_are_kept_aside(version, tmp_path):
    run = import_run(tmp_path, [ok_row("q1", scores={"faithfulness": 0.9, "recall@3": 1.0})], k=3)
    row = Row.objects.get(run=run)
    assert row.scores["faithfulness"] == 0.5 and row.scores["recall@3"] == 0.5
    assert row.metadata["imported_scores"] == {"faithfulness": 0.9, "recall@3": 1.0}


def test_extra_row_fields_are_kept_as_metadata(version, tmp_path):
    run = import_run(tmp_path, [ok_row("q1", latency_ms=812, trace={"id": "t-1"})], k=3)
    assert Row.objects.get(run=run).metadata == {"latency_ms": 812, "trace": {"id": "t-1"}}


def test_a_context_given_as_a_list_keeps_its_chunks(version, tmp_path):
    run = import_run(tmp_path, [ok_row("q1", context=["first chunk", "second chunk", "third chunk"])], k=3)
    row = Row.objects.get(run=run)
    assert row.context == "first chunk\n\nsecond chunk\n\nthird chunk"
    assert row.context_chunks == [
        {"id": "d1", "text": "first chunk"},
        {"id": "d9", "text": "second chunk"},
        {"id": "d3", "text": "third chunk"},
    ]


# ---------------------------------------------------------------------------------------------
# Partial runs and summaries
# ---------------------------------------------------------------------------------------------


def test_a_partial_run_is_accepted_with_its_coverage_stated(version, tmp_path):
    path = write_jsonl(tmp_path / "part.jsonl", [ok_row("q1"), ok_row("q2"), ok_row("q3")])
    result = run_import(path=path, evalset="support", name="part", k=3)
    run = result.run
    assert (run.row_count, run.question_count) == (3, 5)
    assert run.coverage == pytest.approx(0.6) and run.is_partial
    assert "3 of 5 questions (partial run: means cover only these)" in result.message
    slices = run.summary["slices"]
    assert (slices["all"]["rows"], slices["all"]["questions"], slices["all"]["coverage"]) == (3, 5, pytest.approx(0.6))
    assert (slices["policy"]["rows"], slices["policy"]["questions"], slices["policy"]["coverage"]) == (2, 2, 1.0)
    assert (slices["billing"]["rows"], slices["billing"]["questions"]) == (1, 3)
    assert slices["billing"]["coverage"] == pytest.approx(1 / 3)


def test_a_slice_the_partial_run_did_not_touch_is_listed_with_zero_coverage(version, tmp_path):
    run = import_run(tmp_path, [ok_row("q1"), ok_row("q3")], k=3)
    billing = run.summary["slices"]["billing"]
    assert (billing["rows"], billing["questions"], billing["coverage"]) == (0, 3, 0.0)
    assert billing["metrics"]["recall@3"]["mean"] is None


def test_the_summary_gives_means_intervals_and_n_per_slice(version, tmp_path):
    rows = [ok_row(q["id"]) for q in QUESTIONS]
    rows[0]["scores"] = {"answer_relevance": 5}
    rows[2]["scores"] = {"answer_relevance": 3}
    run = import_run(tmp_path, rows, k=3)
    policy = run.summary["slices"]["policy"]["metrics"]["answer_relevance"]
    assert policy["n"] == 2 and policy["mean"] == pytest.approx(4.0)
    assert policy["low"] is not None and policy["low"] <= 4.0 <= policy["high"]
    assert run.summary["metrics"][:6] == ["recall@3", "precision@3", "rr", "ndcg@3", "faithfulness", "abstention"]


# ---------------------------------------------------------------------------------------------
# Cross-check: stored scores equal the engine's single-question functions
# ---------------------------------------------------------------------------------------------


def test_stored_retrieval_scores_match_the_engines_single_question_functions_on_the_demo(db, tmp_path):
    paths = make_demo_eval_set(folder=tmp_path / "demo")
    run = run_import(
        path=paths["cand_rows"],
        evalset="support-qa",
        name="cand",
        k=5,
        chunks_path=paths["cand_chunks"],
        judge_config=demo_judge(paths),
    ).run
    chunks = ChunkMap([json.loads(line) for line in paths["cand_chunks"].read_text().splitlines()])
    checked = spans_checked = 0
    for row in Row.objects.filter(run=run).select_related("question"):
        question = row.question
        ranking = list(row.context_ids) + [c for c in row.retrieved if c not in row.context_ids]
        k = len(row.context_ids)
        if any(g.get("start") is not None for g in question.gold):
            gold = map_spans_to_chunks(question.gold, chunks)
            spans_checked += 1
        else:
            gold = {g["doc"]: g["grade"] for g in question.gold}
            ranking = [chunks.doc_of(c) for c in ranking]
        if not question.answerable:
            assert row.scores["recall@5"] is None
            continue
        assert row.scores["recall@5"] == pytest.approx(recall_at_k(ranking, gold, k))
        assert row.scores["precision@5"] == pytest.approx(precision_at_k(ranking, gold, k))
        assert row.scores["rr"] == pytest.approx(reciprocal_rank(ranking, gold))
        assert row.scores["ndcg@5"] == pytest.approx(ndcg_at_k(ranking, gold, k, gain="exponential"))
        checked += 1
    assert checked > 300 and spans_checked > 100


@pytest.mark.parametrize(
    ("claims", "declined", "expected"),
    [
        ([{"supported": True}, {"supported": False}, {"supported": True}], False, 2 / 3),
        ([{"supported": False}], False, 0.0),
        ([{"supported": True}], True, None),  # declined: nothing to be faithful to
        ([], False, None),
        ([{"supported": True}, {"supported": None}], False, None),  # a claim without a verdict
        ([{"supported": True}, {"text": "no verdict"}], False, None),
        ([{"supported": 1}], False, None),  # an integer is not a verdict
        ([{"supported": False}, {"supported": "yes"}], False, None),
    ],
)
def test_faithfulness_is_the_share_of_supported_claims_when_every_claim_has_a_boolean_verdict(
    claims, declined, expected
):
    assert faithfulness_of(claims, declined) == expected
