"""Retrieval metrics for 100,000 questions at k=10, from per-question Python lists of string ids."""

from __future__ import annotations

import math
import warnings

import numpy as np

from evalcore.engine import encode_retrieval, score_encoded, score_retrieval

from . import spec
from ._common import Targets, best_time, fmt_ratio, fmt_time, print_table
from .data import retrieval_run

K = 10
METRICS = ("recall", "precision", "rr", "ndcg")


def _ours(ranked, gold, gain="exponential"):
    frame = score_retrieval(ranked, gold, K, gain=gain)
    return {m: float(frame[c].mean()) for m, c in zip(METRICS, (f"recall@{K}", f"precision@{K}", "rr", f"ndcg@{K}"))}


def _kernel(encoded):
    scored = score_encoded(encoded, K)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return {m: float(np.nanmean(scored[m])) for m in METRICS}


def _trec_inputs(ranked, gold):
    """trec_eval's dicts: qrels of the answerable questions, a run with strictly decreasing scores."""
    qrels = {str(i): dict(g) for i, g in enumerate(gold) if g}
    run = {str(i): {doc: float(len(docs) - r) for r, doc in enumerate(docs)} for i, docs in enumerate(ranked)}
    return qrels, run


def _pytrec_eval(ranked, gold):
    import pytrec_eval

    qrels, run = _trec_inputs(ranked, gold)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {f"recall_{K}", f"P_{K}", "recip_rank", f"ndcg_cut_{K}"})
    per_query = evaluator.evaluate(run)
    names = (f"recall_{K}", f"P_{K}", "recip_rank", f"ndcg_cut_{K}")
    return {m: sum(q[name] for q in per_query.values()) / len(per_query) for m, name in zip(METRICS, names)}


def _ranx(ranked, gold):
    from ranx import Qrels, Run, evaluate

    qrels, run = _trec_inputs(ranked, gold)
    names = [f"recall@{K}", f"precision@{K}", "mrr", f"ndcg_burges@{K}"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), names, make_comparable=True)
    return {m: float(scores[name]) for m, name in zip(METRICS, names)}


def _agree(a: dict, b: dict, metrics=METRICS) -> float:
    """The largest difference between two sets of means."""
    return max(abs(a[m] - b[m]) for m in metrics)


def run(targets: Targets, *, quick: bool = False) -> None:
    n = 20_000 if quick else 100_000
    ranked, gold = retrieval_run(n)
    answerable = sum(1 for g in gold if g)
    ids = sum(map(len, ranked))

    # Sanity before timing: every implementation gives the same means.
    reference = spec.score_questions(ranked, gold, K)
    ours = _ours(ranked, gold)
    linear = _ours(ranked, gold, gain="linear")
    encoded = encode_retrieval(ranked, gold)
    kernel = _kernel(encoded)
    trec = _pytrec_eval(ranked, gold)
    checks = [
        ("ours (score_retrieval) vs spec", _agree(ours, reference)),
        ("ours (score_encoded) vs spec", _agree(kernel, reference)),
        ("pytrec_eval vs spec (recall, P, recip_rank)", _agree(trec, reference, METRICS[:3])),
        ("pytrec_eval ndcg_cut (linear gain) vs ours gain='linear'", abs(trec["ndcg"] - linear["ndcg"])),
    ]
    use_ranx = not quick
    if use_ranx:
        # Warm ranx's numba JIT on a small run with the same id format and metrics (not timed).
        small_ranked, small_gold = retrieval_run(200, seed=99)
        _ranx(small_ranked, small_gold)
        ranx_means = _ranx(ranked, gold)
        checks.append(("ranx vs spec (ndcg_burges = 2^g - 1 gain)", _agree(ranx_means, reference)))
    for label, diff in checks:
        if not diff <= 1e-9:
            raise SystemExit(f"retrieval sanity check failed: {label} differ by {diff:.3g}")

    repeats = 1 if quick else 2
    spec_time, _ = best_time(lambda: spec.score_questions(ranked, gold, K), repeats)
    ours_time, _ = best_time(lambda: _ours(ranked, gold), 3)
    encode_time, _ = best_time(lambda: encode_retrieval(ranked, gold), 3)
    kernel_time, _ = best_time(lambda: _kernel(encoded), 5)
    trec_time, _ = best_time(lambda: _pytrec_eval(ranked, gold), repeats)
    ranx_time = best_time(lambda: _ranx(ranked, gold), 1)[0] if use_ranx else math.nan

    rows = [
        ["spec's four functions, Python loop", fmt_time(spec_time), fmt_ratio(1.0), fmt_ratio(spec_time / ours_time)],
        ["ours: score_retrieval, end to end", fmt_time(ours_time), fmt_ratio(spec_time / ours_time), fmt_ratio(1.0)],
        ["  of which encode_retrieval (ids -> ints)", fmt_time(encode_time), "", ""],
        ["ours: score_encoded on integer-coded input", fmt_time(kernel_time), fmt_ratio(spec_time / kernel_time), ""],
        [
            "pytrec_eval, incl. building its dicts",
            fmt_time(trec_time),
            fmt_ratio(spec_time / trec_time),
            fmt_ratio(trec_time / ours_time),
        ],
        [
            "ranx, incl. building Qrels/Run (JIT warm)",
            fmt_time(ranx_time) if use_ranx else "skipped (--quick)",
            fmt_ratio(spec_time / ranx_time) if use_ranx else "",
            fmt_ratio(ranx_time / ours_time) if use_ranx else "",
        ],
    ]
    print_table(
        f"Retrieval metrics: {n:,} questions ({answerable:,} answerable), {ids:,} retrieved ids, k={K}",
        ["implementation", "time", "speed vs spec", "ours e2e faster by"],
        rows,
        [
            f"sanity (checked before timing, max |difference| of the four means): {label} {diff:.1e}"
            for label, diff in checks
        ]
        + [
            "metrics: recall@10, precision@10, reciprocal rank (whole list), nDCG@10; ids like 'doc-123456',",
            "  ~20 retrieved per question, 1-5 gold with grades 1-3, 10% unanswerable (left out of the means).",
            f"best of: spec {repeats}, ours 3, kernel 5, pytrec_eval {repeats}, ranx 1 (after warming its JIT).",
        ],
    )
    targets.check(
        spec_time / ours_time >= 1.5,
        f"retrieval end to end from Python lists: {fmt_ratio(spec_time / ours_time)} the spec's functions (target >= 1.5x)",
    )
    targets.check(
        spec_time / kernel_time >= 20,
        f"retrieval from integer-coded input: {fmt_ratio(spec_time / kernel_time)} the spec's functions (target >= 20x)",
    )
    targets.check(
        trec_time / ours_time >= 5,
        f"retrieval end to end: {fmt_ratio(trec_time / ours_time)} pytrec_eval (target >= 5x)",
    )
