"""Score a run's rows: deterministic retrieval metrics with the engine, faithfulness from claims.

Conventions (shown on the run page and in docs/formats.md):

* **k** per question is the number of chunks that reached the model (``context_ids``) when the
  row gives them, else the run's k. The ranking scored is ``context_ids`` followed by the rest of
  ``retrieved``, so the @k metrics are about exactly what the model saw.
* **Gold unit**: with a chunk map, gold spans are matched to chunks (any overlap; a chunk takes the
  highest grade among the spans it overlaps) and document-level gold is matched by mapping each
  retrieved chunk to its document. Without one, retrieved ids are documents and a span counts
  for its whole document.
* **Unanswerable** questions get no retrieval scores (None) and are scored on ``abstention``:
  1 if the system declined, 0 if it answered. Answerable questions have no abstention score.
* **Faithfulness** is the fraction of the answer's claims the judge found supported; None when
  there are no claims or the system declined (refusals are scored by abstention instead), and
  when the judge gave no verdict on one of the claims (a failed call of a judge run by the tool).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from evalcore.engine import ChunkMap, is_retrieval_metric, retrieval_metric_names, score_retrieval

ABSTENTION = "abstention"
#: The metrics computed at each extra cut-off: reciprocal rank cut at the cut-off too (trec_eval users expect rr@k).
CUTOFF_METRICS = ("recall", "precision", "rr@k", "ndcg")


def is_judge_metric(name: str) -> bool:
    """Judge metrics depend on the judge config; deterministic ones do not."""
    return not is_retrieval_metric(name) and name != ABSTENTION


class QuestionInfo(NamedTuple):
    """What scoring a row needs of its question (a tuple: an import builds one a row, the fewer steps the better)."""

    pk: int
    qid: str
    qtype: str
    answerable: bool
    gold: list[dict[str, Any]]


def ranking_and_k(retrieved: Sequence[str], context_ids: Sequence[str] | None, run_k: int) -> tuple[list[str], int]:
    """Return the ranking to score and its cut-off (see the module's conventions)."""
    if context_ids is None:
        return list(retrieved), run_k
    seen = set(context_ids)
    return list(context_ids) + [doc for doc in retrieved if doc not in seen], len(context_ids)


def gold_for(question: QuestionInfo, chunk_map: ChunkMap | None) -> tuple[dict[str, float], bool]:
    """Return the question's gold as ``{id: grade}`` and whether ids are chunks (span gold)."""
    spans = [entry for entry in question.gold if entry.get("start") is not None]
    if chunk_map is not None and spans:
        return chunk_map.chunk_grades(question.gold), True
    grades: dict[str, float] = {}
    for entry in question.gold:
        doc = entry["doc"]
        grades[doc] = max(grades.get(doc, -math.inf), float(entry["grade"]))
    return grades, False


def faithfulness_of(claims: list[dict[str, Any]], declined: bool) -> float | None:
    """The share of claims supported; None when declined, without claims, or when a claim has no boolean verdict.

    One loop, no generator: it runs once a row of every import (a generator's ``any`` and ``sum`` cost
    5 % of a 50,000-row import's time)."""
    if declined or not claims:
        return None
    supported = 0
    for claim in claims:
        verdict = claim.get("supported")
        if verdict is True:
            supported += 1
        elif verdict is not False:
            return None
    return supported / len(claims)


def score_rows(
    rows: list[dict[str, Any]],
    questions: list[QuestionInfo],
    *,
    k: int,
    gain: str,
    chunk_map: ChunkMap | None,
    cutoffs: Sequence[int] = (),
) -> list[dict[str, float | None]]:
    """Return the computed scores of each row (imported judge scores are merged by the caller).

    ``cutoffs``: further fixed cut-offs (a TREC run scored at 5, 10 and 100 at once); each adds
    ``recall@c``, ``precision@c``, ``ndcg@c`` and ``rr@c`` (reciprocal rank cut at c).
    """
    rankings, golds, ks = [], [], []
    for row, question in zip(rows, questions):
        ranking, k_row = ranking_and_k(row["retrieved"], row.get("context_ids"), k)
        gold, chunk_level = gold_for(question, chunk_map)
        if chunk_map is not None and not chunk_level:
            ranking = chunk_map.documents(ranking)
        rankings.append(ranking)
        golds.append(gold)
        ks.append(k_row)
    frame = (
        score_retrieval(
            rankings,
            golds,
            np.asarray(ks, dtype=np.int64),
            k_label=k,
            gain=gain,  # type: ignore[arg-type]
            answerable=[q.answerable for q in questions],
        )
        if rows
        else None
    )
    names = retrieval_metric_names(k)
    columns = {name: frame[name].to_numpy(dtype=float).tolist() for name in names} if frame is not None else {}
    for cutoff in cutoffs if rows else ():
        extra = score_retrieval(
            rankings,
            golds,
            cutoff,
            gain=gain,  # type: ignore[arg-type]
            answerable=[q.answerable for q in questions],
            metrics=CUTOFF_METRICS,
        )
        for name in retrieval_metric_names(cutoff, metrics=CUTOFF_METRICS):
            if name not in columns:
                names.append(name)
                columns[name] = extra[name].to_numpy(dtype=float).tolist()
    out = []
    for i, (row, question) in enumerate(zip(rows, questions)):
        scores: dict[str, float | None] = {}
        has_retrieval = bool(row["retrieved"] or row.get("context_ids"))
        for name in names:
            value = columns[name][i]
            scores[name] = None if (math.isnan(value) or not has_retrieval) else value
        scores["faithfulness"] = faithfulness_of(row["claims"], row["declined"])
        scores[ABSTENTION] = None if question.answerable else (1.0 if row["declined"] else 0.0)
        out.append(scores)
    return out
