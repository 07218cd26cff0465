"""Deterministic demo data shaped like the spec's worked example: a chunking change.

A team replaces 512-token chunks with 256-token chunks and a reranker, keeping five chunks in
the prompt. Recall@5 rises (about 0.78 to 0.84), but smaller chunks cut tables and definitions in
half, and the judge finds unsupported claims clustered on questions whose answers span a chunk
boundary: faithfulness falls (about 0.91 to 0.88) and the gate blocks on it.

``write_demo_files(folder)`` writes the eval set, the two chunk maps, the two runs and the judge
config as the documented import formats, so loading the demo exercises the real import path.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

DOC_LENGTH = 4096
N_DOCS = 240
TYPES = [("policy", 120), ("billing", 100), ("technical", 100), ("account", 80)]
UNANSWERABLE_SHARE = 0.075
K = 5

TOPICS = {
    "policy": ["notice period", "refund window", "data retention", "warranty term", "cancellation fee", "travel allowance"],
    "billing": ["invoice date", "late fee", "payment terms", "currency", "tax rate", "credit limit"],
    "technical": ["API rate limit", "timeout", "retry policy", "TLS version", "log retention", "backup schedule"],
    "account": ["password length", "session lifetime", "seat limit", "SSO provider", "admin role", "2FA method"],
}
VALUES = ["14 days", "30 days", "90 days", "12 months", "5 %", "EUR", "100 requests per minute", "TLS 1.3", "two seats", "weekly"]

JUDGE_CONFIG = {
    "model": "gpt-x",
    "model_version": "2026-05",
    "prompt": (
        "You are checking whether a claim is supported by the retrieved context.\n"
        "Answer SUPPORTED only if the context states the claim; otherwise UNSUPPORTED.\n"
        "Context:\n{context}\nClaim: {claim}"
    ),
    "temperature": 0.0,
    "claim_splitting": "llm-atomic-claims-v2",
    "library_versions": {"ragas": "0.3.9", "openai": "2.8.0"},
}
BASE_SYSTEM = {"retriever": "bm25+dense", "chunking": {"tokens": 512, "overlap": 0}, "reranker": None, "prompt": "answer-v4"}
CAND_SYSTEM = {"retriever": "bm25+dense", "chunking": {"tokens": 256, "overlap": 0}, "reranker": "cross-encoder-v2", "prompt": "answer-v4"}


def _chunk_map(prefix: str, size: int) -> list[dict[str, Any]]:
    return [
        {"id": f"{prefix}-doc{d:03d}-{i}", "doc": f"doc{d:03d}", "start": start, "end": start + size}
        for d in range(N_DOCS)
        for i, start in enumerate(range(0, DOC_LENGTH, size))
    ]


def _chunk_of(prefix: str, size: int, doc: str, offset: int) -> str:
    return f"{prefix}-{doc}-{min(offset, DOC_LENGTH - 1) // size}"


def build_demo(seed: int = 2026) -> dict[str, Any]:
    """Return the demo's questions, chunk maps, runs and judge config (pure, deterministic)."""
    rng = random.Random(seed)
    questions: list[dict[str, Any]] = []
    n = 0
    for qtype, count in TYPES:
        for i in range(count):
            n += 1
            topic = rng.choice(TOPICS[qtype])
            answerable = rng.random() > UNANSWERABLE_SHARE
            question: dict[str, Any] = {
                "id": f"q{n:04d}",
                "question": f"What is the {topic} for plan {rng.choice('ABCDEFG')}{rng.randint(1, 9)} ({qtype} #{i + 1})?",
                "type": qtype,
                "answerable": answerable,
                "reference_answer": f"The {topic} is {rng.choice(VALUES)}." if answerable else "",
                "gold": [],
                "tags": [],
            }
            if answerable:
                docs = rng.sample(range(N_DOCS), rng.choice([1, 1, 2, 2, 3]))
                use_spans = rng.random() < 0.45
                boundary = use_spans and rng.random() < 0.55
                for j, d in enumerate(docs):
                    grade = 3 if j == 0 else rng.choice([1, 2])
                    if use_spans:
                        if boundary and j == 0:
                            # an answer that crosses a 256-character boundary inside one 512 chunk
                            start = rng.randrange(0, DOC_LENGTH // 512) * 512 + 256 - rng.randint(40, 120)
                            question["tags"] = ["spans-chunk-boundary"]
                        else:
                            start = rng.randrange(0, DOC_LENGTH - 300)
                            start -= start % 256
                            start += rng.randint(10, 100)
                        question["gold"].append({"doc": f"doc{d:03d}", "grade": grade, "start": start, "end": start + rng.randint(80, 140)})
                    else:
                        question["gold"].append({"doc": f"doc{d:03d}", "grade": grade})
            questions.append(question)

    base_rows, cand_rows = [], []
    for q in questions:
        b, c = _rows_for(q, rng)
        base_rows.append(b)
        cand_rows.append(c)
    return {
        "questions": questions,
        "base_chunks": _chunk_map("c512", 2048),
        "cand_chunks": _chunk_map("c256", 1024),
        "base_rows": base_rows,
        "cand_rows": cand_rows,
        "judge": JUDGE_CONFIG,
    }


def _ranked(q: dict[str, Any], rng: random.Random, draws: list[float], positions: list[int], prefix: str, size: int, hit_prob: float) -> list[str]:
    """Return 10 ranked chunks: the gold chunks whose draw is under ``hit_prob`` at their positions."""
    wanted = [_chunk_of(prefix, size, e["doc"], e.get("start", 0) + (e.get("end", 1) - e.get("start", 0)) // 2) for e in q["gold"]]
    hits = [(pos, chunk) for chunk, u, pos in zip(wanted, draws, positions) if u < hit_prob]
    filler: list[str] = []
    while len(filler) < 10:
        chunk = _chunk_of(prefix, size, f"doc{rng.randrange(N_DOCS):03d}", rng.randrange(0, DOC_LENGTH))
        if chunk not in wanted and chunk not in filler:
            filler.append(chunk)
    ranked = filler[: 10 - len(hits)]
    for pos, chunk in sorted(hits):
        if chunk not in ranked:
            ranked.insert(min(pos, len(ranked)), chunk)
    return ranked[:10]


def _claim_texts(q: dict[str, Any], rng: random.Random) -> list[str]:
    topic = q["question"].split("What is the ")[-1].split(" for plan")[0]
    templates = [
        f"The {topic} is {rng.choice(VALUES)}.",
        f"This applies to every plan in the {q['type']} catalogue.",
        f"Changes take effect after {rng.choice(VALUES)}.",
        "Exceptions need written approval from an admin.",
        f"The rule was introduced in the {rng.choice(['2024', '2025', '2026'])} revision.",
    ]
    return templates[: rng.choice([2, 3, 3, 4, 5])]


def _rows_for(q: dict[str, Any], rng: random.Random) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the baseline and candidate rows of one question, paired as real runs are.

    One uniform draw per gold document and per claim is shared by both runs, so the candidate
    differs from the baseline only where its higher hit rate or lower support rate says so.
    """
    boundary = "spans-chunk-boundary" in q["tags"]
    draws = [rng.random() for _ in q["gold"]]
    positions = [rng.choice([0, 0, 1, 1, 2, 3, 4]) for _ in q["gold"]]
    texts = _claim_texts(q, rng)
    claim_draws = [rng.random() for _ in texts]
    decline_draw = rng.random()
    relevance = rng.choice([3, 4, 4, 5, 5])
    rows = []
    for prefix, size, hit_prob, p_supported in (
        ("c512", 2048, 0.775, 0.915),
        ("c256", 1024, 0.84, 0.82 if boundary else 0.905),
    ):
        ranked = _ranked(q, rng, draws, positions, prefix, size, hit_prob)
        declined = decline_draw < (0.7 if not q["answerable"] else 0.02)
        context_ids = ranked[:K]
        claims = [] if declined else [
            {
                "text": text,
                "supported": u < p_supported,
                "rationale": "Stated in the context." if u < p_supported else "No chunk in the context states this.",
            }
            for text, u in zip(texts, claim_draws)
        ]
        rows.append({
            "id": q["id"],
            "retrieved": ranked,
            "context_ids": context_ids,
            "context": [f"[{cid}] Section text about {q['type']} rules, part {cid.rsplit('-', 1)[-1]}." for cid in context_ids],
            "answer": "I could not find this in the documentation." if declined else " ".join(c["text"] for c in claims),
            "declined": declined,
            "claims": claims,
            "scores": {"answer_relevance": None if declined else relevance},
        })
    return rows[0], rows[1]


def write_demo_files(folder: Path, seed: int = 2026) -> dict[str, Path]:
    """Write the demo in the documented import formats; return the file paths."""
    data = build_demo(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "questions": folder / "support-qa.questions.jsonl",
        "base_chunks": folder / "chunks-512.chunks.jsonl",
        "cand_chunks": folder / "chunks-256.chunks.jsonl",
        "base_rows": folder / "chunks-512.rows.jsonl",
        "cand_rows": folder / "chunks-256-rerank.rows.jsonl",
        "judge": folder / "judge.json",
        "base_system": folder / "chunks-512.system.json",
        "cand_system": folder / "chunks-256-rerank.system.json",
    }
    for key in ("questions", "base_chunks", "cand_chunks", "base_rows", "cand_rows"):
        with paths[key].open("w", encoding="utf-8") as handle:
            for item in data[key]:
                handle.write(json.dumps(item, ensure_ascii=False) + "\n")
    paths["judge"].write_text(json.dumps(data["judge"], indent=2))
    paths["base_system"].write_text(json.dumps(BASE_SYSTEM, indent=2))
    paths["cand_system"].write_text(json.dumps(CAND_SYSTEM, indent=2))
    return paths
