"""Deterministic demo data shaped like the spec's worked example: a chunking change.

A team replaces 512-token chunks with 256-token chunks and a reranker, keeping five chunks in
the prompt. Recall@5 rises (about 0.78 to 0.84), but smaller chunks cut tables and definitions in
half, and unsupported claims cluster on questions whose answers span a chunk boundary:
faithfulness falls (about 0.91 to 0.88 by the judge).

The demo tells the truth. Every claim is truly supported or not: a supported claim's sentence is
in the context the model saw, an unsupported one's is not (so people labelling the demo are right
when they read the context). The run's judge (``JUDGE_CONFIG``) errs the way the spec's judge
does: it passes about a third of the unsupported claims, so people find it not fit to gate. A
tuned judge (``TUNED_JUDGE_CONFIG``, few-shot examples from the disagreements) errs rarely; both
runs re-scored by it are the ``*-judge-v2`` runs, where the gate decides on the data alone.

``write_demo_files(folder)`` writes the eval set, the two chunk maps, the four runs and the judge
configs as the documented import formats, so loading the demo exercises the real import path.
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
    "policy": [
        "notice period",
        "refund window",
        "data retention",
        "warranty term",
        "cancellation fee",
        "travel allowance",
    ],
    "billing": ["invoice date", "late fee", "payment terms", "currency", "tax rate", "credit limit"],
    "technical": ["API rate limit", "timeout", "retry policy", "TLS version", "log retention", "backup schedule"],
    "account": ["password length", "session lifetime", "seat limit", "SSO provider", "admin role", "2FA method"],
}
# Ten values per kind (the random draws, and so the runs' numbers, do not depend on which list).
DURATIONS = [
    "7 days",
    "14 days",
    "30 days",
    "45 days",
    "60 days",
    "90 days",
    "6 months",
    "12 months",
    "24 months",
    "36 months",
]
AMOUNTS = ["2 %", "5 %", "8 %", "10 %", "EUR 15", "EUR 25", "EUR 40", "USD 20", "USD 50", "GBP 30"]
LIMITS = [
    "100 requests per minute",
    "500 requests per minute",
    "10 seats",
    "25 seats",
    "12 characters",
    "16 characters",
    "TLS 1.2",
    "TLS 1.3",
    "3 retries",
    "5 retries",
]
WAITS = [
    "10 seconds",
    "30 seconds",
    "60 seconds",
    "90 seconds",
    "2 minutes",
    "5 minutes",
    "10 minutes",
    "15 minutes",
    "30 minutes",
    "8 hours",
]
TOPIC_VALUES = {
    "notice period": DURATIONS,
    "refund window": DURATIONS,
    "data retention": DURATIONS,
    "warranty term": DURATIONS,
    "cancellation fee": AMOUNTS,
    "travel allowance": AMOUNTS,
    "late fee": AMOUNTS,
    "tax rate": AMOUNTS,
    "credit limit": AMOUNTS,
    "payment terms": DURATIONS,
    "log retention": DURATIONS,
    "backup schedule": DURATIONS,
    "invoice date": [
        "the 1st",
        "the 5th",
        "the 10th",
        "the 15th",
        "the 20th",
        "the 25th",
        "the 28th",
        "the last day of the month",
        "the first Monday",
        "the first working day",
    ],
    "currency": ["EUR", "USD", "GBP", "CHF", "SEK", "NOK", "DKK", "PLN", "CZK", "JPY"],
    "API rate limit": LIMITS,
    "retry policy": LIMITS,
    "TLS version": LIMITS,
    "password length": LIMITS,
    "seat limit": LIMITS,
    "timeout": WAITS,
    "session lifetime": WAITS,
    "SSO provider": [
        "Okta",
        "Azure AD",
        "Google",
        "OneLogin",
        "Auth0",
        "Ping",
        "JumpCloud",
        "Keycloak",
        "Duo",
        "AWS IAM",
    ],
    "admin role": [
        "Owner",
        "Admin",
        "Billing admin",
        "Security admin",
        "Workspace admin",
        "Org admin",
        "Super admin",
        "Manager",
        "Editor",
        "Auditor",
    ],
    "2FA method": [
        "TOTP",
        "SMS",
        "WebAuthn",
        "email codes",
        "push",
        "hardware keys",
        "backup codes",
        "passkeys",
        "YubiKey",
        "authenticator apps",
    ],
}

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
TUNED_JUDGE_CONFIG = {
    **JUDGE_CONFIG,
    "prompt": JUDGE_CONFIG["prompt"]
    + (
        "\nA claim whose number, date or name is not in the context is UNSUPPORTED, even when it is plausible.\n"
        "Examples: (few-shot examples exported from the disagreements of campaign faithfulness-claims)"
    ),
}
#: How each judge errs: the share of truly supported claims it fails, and of unsupported claims it passes.
JUDGE_ERRORS = {"judge": (0.03, 0.36), "tuned": (0.02, 0.05)}
BASE_SYSTEM = {
    "retriever": "bm25+dense",
    "chunking": {"tokens": 512, "overlap": 0},
    "reranker": None,
    "prompt": "answer-v4",
}
CAND_SYSTEM = {
    "retriever": "bm25+dense",
    "chunking": {"tokens": 256, "overlap": 0},
    "reranker": "cross-encoder-v2",
    "prompt": "answer-v4",
}


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
                "reference_answer": f"The {topic} is {rng.choice(TOPIC_VALUES[topic])}." if answerable else "",
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
                        question["gold"].append(
                            {"doc": f"doc{d:03d}", "grade": grade, "start": start, "end": start + rng.randint(80, 140)}
                        )
                    else:
                        question["gold"].append({"doc": f"doc{d:03d}", "grade": grade})
            questions.append(question)

    runs: dict[str, list[dict[str, Any]]] = {"base_rows": [], "cand_rows": [], "base_rows_v2": [], "cand_rows_v2": []}
    for q in questions:
        b, c = _rows_for(q, rng)
        runs["base_rows"].append(_judged(b, "judge"))
        runs["cand_rows"].append(_judged(c, "judge"))
        runs["base_rows_v2"].append(_judged(b, "tuned"))
        runs["cand_rows_v2"].append(_judged(c, "tuned"))
    return {
        "questions": questions,
        "base_chunks": _chunk_map("c512", 2048),
        "cand_chunks": _chunk_map("c256", 1024),
        **runs,
        "judge": JUDGE_CONFIG,
        "tuned_judge": TUNED_JUDGE_CONFIG,
    }


def _ranked(
    q: dict[str, Any],
    rng: random.Random,
    draws: list[float],
    positions: list[int],
    prefix: str,
    size: int,
    hit_prob: float,
) -> list[str]:
    """Return 10 ranked chunks: the gold chunks whose draw is under ``hit_prob`` at their positions."""
    wanted = [
        _chunk_of(prefix, size, e["doc"], e.get("start", 0) + (e.get("end", 1) - e.get("start", 0)) // 2)
        for e in q["gold"]
    ]
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
        f"The {topic} is {rng.choice(TOPIC_VALUES[topic])}.",
        f"This applies to every plan in the {q['type']} catalogue.",
        f"Changes take effect after {rng.choice(DURATIONS)}.",
        "Exceptions need written approval from an admin.",
        f"The rule was introduced in the {rng.choice(['2024', '2025', '2026'])} revision.",
    ]
    return templates[: rng.choice([2, 3, 3, 4, 5])]


FILLER = [
    "Plans renew automatically unless cancelled in writing.",
    "Invoices are issued on the first working day of the month.",
    "Support answers within one business day.",
    "Admins can export usage reports from the console.",
    "Discounts apply to annual plans only.",
    "Customer data is stored in the EU region by default.",
    "Seats can be reassigned at any time by an admin.",
    "Prices exclude VAT unless stated otherwise.",
    "The status page lists planned maintenance a week ahead.",
    "Trial accounts are limited to three projects.",
]


def _context_texts(q: dict[str, Any], context_ids: list[str], supported: list[str], prefix: str) -> list[str]:
    """The text of each chunk that reached the model: the sentences that support the answer's
    supported claims, spread over the chunks, among unrelated sentences of the same documents."""
    rng = random.Random(f"{q['id']}-{prefix}")  # its own stream: the run's numbers do not depend on it
    chunks = []
    for cid in context_ids:
        _, doc, part = cid.split("-")
        chunks.append([f"{doc} § {int(part) + 1}:", *rng.sample(FILLER, 2)])
    for sentence in supported:
        chunk = chunks[rng.randrange(len(chunks))] if chunks else None
        if chunk is not None:
            chunk.insert(rng.randint(1, len(chunk)), sentence)
    return [" ".join(parts) for parts in chunks]


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
    judge_rng = random.Random(f"{q['id']}-judges")  # its own stream: retrieval numbers do not depend on it
    judge_draws = [{name: judge_rng.random() for name in JUDGE_ERRORS} for _ in texts]
    for prefix, size, hit_prob, p_true in (
        ("c512", 2048, 0.775, 0.91),
        ("c256", 1024, 0.84, 0.754 if boundary else 0.893),
    ):
        ranked = _ranked(q, rng, draws, positions, prefix, size, hit_prob)
        declined = decline_draw < (0.7 if not q["answerable"] else 0.02)
        context_ids = ranked[:K]
        claims = (
            []
            if declined
            else [{"text": text, "true": u < p_true, "draws": d} for text, u, d in zip(texts, claim_draws, judge_draws)]
        )
        rows.append(
            {
                "id": q["id"],
                "retrieved": ranked,
                "context_ids": context_ids,
                "context": _context_texts(q, context_ids, [c["text"] for c in claims if c["true"]], prefix),
                "answer": "I could not find this in the documentation."
                if declined
                else " ".join(c["text"] for c in claims),
                "declined": declined,
                "claims": claims,
                "scores": {"answer_relevance": None if declined else relevance},
            }
        )
    return rows[0], rows[1]


def _judged(row: dict[str, Any], judge: str) -> dict[str, Any]:
    """The row as ``judge`` scored it: each claim's verdict is the truth, except where the judge errs."""
    false_fail, miss = JUDGE_ERRORS[judge]
    claims = []
    for claim in row["claims"]:
        draw = claim["draws"][judge]
        supported = draw >= false_fail if claim["true"] else draw < miss
        claims.append(
            {
                "text": claim["text"],
                "supported": supported,
                "rationale": "Stated in the context." if supported else "No chunk in the context states this.",
            }
        )
    return {**row, "claims": claims}


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
        "base_rows_v2": folder / "chunks-512-judge-v2.rows.jsonl",
        "cand_rows_v2": folder / "chunks-256-rerank-judge-v2.rows.jsonl",
        "judge": folder / "judge.json",
        "tuned_judge": folder / "judge-v2.json",
        "base_system": folder / "chunks-512.system.json",
        "cand_system": folder / "chunks-256-rerank.system.json",
    }
    for key in ("questions", "base_chunks", "cand_chunks", "base_rows", "cand_rows", "base_rows_v2", "cand_rows_v2"):
        with paths[key].open("w", encoding="utf-8") as handle:
            for item in data[key]:
                handle.write(json.dumps(item, ensure_ascii=False) + "\n")
    paths["judge"].write_text(json.dumps(data["judge"], indent=2))
    paths["tuned_judge"].write_text(json.dumps(data["tuned_judge"], indent=2))
    paths["base_system"].write_text(json.dumps(BASE_SYSTEM, indent=2))
    paths["cand_system"].write_text(json.dumps(CAND_SYSTEM, indent=2))
    return paths
