"""Files for the scale benchmark: an eval set and two runs of ``n`` questions in the import formats.

Twenty question types of uneven size, 1-3 graded gold documents each, eight retrieved ids (five
reach the model), a context of five short chunks, an answer, 1-6 judged claims and five imported
scores, so that each run has ten metrics (recall@5, precision@5, rr, ndcg@5 and faithfulness
computed on import; answer_relevance, answer_correct, context_precision, semantic_similarity and
latency imported). The candidate reranks about a third of the questions, regenerates half of the
answers and moves every continuous score a little, as a real change does.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

TYPES = 20
CHUNK = "Refunds are issued within thirty days of purchase when the receipt is shown. "  # ~80 characters


def write_scale_files(folder: Path, n: int, *, seed: int = 5) -> dict[str, Path]:
    """Write ``questions.jsonl``, ``base.jsonl`` and ``cand.jsonl`` of ``n`` questions into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, TYPES + 1) ** 0.8
    types = rng.choice(TYPES, n, p=weights / weights.sum())
    n_gold = rng.integers(1, 4, n)
    quality = rng.beta(6, 2, n)
    paths = {name: folder / f"{name}.jsonl" for name in ("questions", "base", "cand")}
    _write_questions(paths["questions"], types, n_gold)
    for name, run_seed in (("base", seed + 1), ("cand", seed + 2)):
        r = np.random.default_rng(run_seed)
        moved = r.random(n) < (0.33 if name == "cand" else 0.0)
        drift = 0.01 if name == "cand" else 0.0
        hits = r.random((n, 8)) < (quality[:, None] * 0.4 + drift)
        claims_n = r.integers(1, 7, n)
        supported = r.random((n, 6)) < np.clip(quality + drift, 0, 1)[:, None]
        relevance = np.clip(np.rint(1 + 4 * quality + r.normal(0, 0.6, n)), 1, 5)
        correct = r.random(n) < quality + drift
        similarity = np.clip(0.55 + 0.4 * quality + r.normal(drift / 5, 0.03, n), 0, 1)
        precision = r.random(n)
        latency = r.gamma(4.0, 0.3, n)
        with paths[name].open("w", encoding="utf-8") as out:
            for i in range(n):
                retrieved = [f"d{i}-{j % 3}" if hits[i, j] else f"x{i}-{j}" for j in range(8)]
                if moved[i]:
                    retrieved = retrieved[::-1]
                row = {
                    "id": f"q{i:06d}",
                    "retrieved": retrieved,
                    "context_ids": retrieved[:5],
                    "context": [CHUNK] * 5,
                    "answer": f"Plan {i} refunds within thirty days. " * 3,
                    "claims": [
                        {"text": f"Claim {c} about plan {i}.", "supported": bool(supported[i, c])}
                        for c in range(int(claims_n[i]))
                    ],
                    "scores": {
                        "answer_relevance": float((relevance[i] - 1) / 4),
                        "answer_correct": float(correct[i]),
                        "context_precision": round(float(precision[i]), 4),
                        "semantic_similarity": round(float(similarity[i]), 6),
                        "latency": round(float(latency[i]), 4),
                    },
                }
                out.write(json.dumps(row) + "\n")
    return paths


def write_questions_file(path: Path, n: int, *, seed: int = 5) -> Path:
    """Write only the eval set of ``n`` questions (the same as :func:`write_scale_files` writes) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, TYPES + 1) ** 0.8
    types = rng.choice(TYPES, n, p=weights / weights.sum())
    _write_questions(path, types, rng.integers(1, 4, n))
    return path


def _write_questions(path: Path, types: np.ndarray, n_gold: np.ndarray) -> None:
    with path.open("w", encoding="utf-8") as out:
        for i in range(len(types)):
            gold = [{"doc": f"d{i}-{g}", "grade": 1 + (g + i) % 3} for g in range(int(n_gold[i]))]
            record = {"id": f"q{i:06d}", "question": f"What does plan {i} refund?", "type": f"type-{types[i]:02d}"}
            out.write(json.dumps({**record, "gold": gold}) + "\n")
