"""The files an eval owner brings to a new instance, for the first-run walk (tests/web/test_first_run_browser.py).

60 questions of two types about 60 plans; two runs of them (a baseline and a candidate) with answers
of two sentences each and the two chunks that reached the model, and no judge verdicts: a judge
scores them in the tool (the fake judge, which calls a claim supported when each of its words is in
the context). The candidate's second claim is unsupported twice as often as the baseline's
("ships overnight" where the context says worldwide), so faithfulness drops by about 8 points. In
five rows the context says a plan "never refunds within thirty days" and the answer says it
refunds: every word of the claim is in the context, so the literal judge passes it, and a person
does not. That is the judge's miss the campaign is there to find.
"""

from __future__ import annotations

import json
from pathlib import Path

N = 60
TRAPS = {7, 19, 31, 43, 55}


def _plan(i: int) -> str:
    return f"p{i:03d}"


def _row(i: int, *, candidate: bool) -> dict:
    plan = _plan(i)
    refund = f"Plan {plan} refunds within thirty days."
    unsupported = i % 3 == 0 if candidate else i % 6 == 0
    second = f"Plan {plan} ships overnight." if unsupported else f"Plan {plan} ships worldwide."
    first_chunk = f"Plan {plan} never refunds within thirty days." if i in TRAPS else refund
    return {
        "id": f"q{i:03d}",
        "retrieved": [f"doc-{plan}", f"doc-{plan}-b", "doc-other"],
        "context_ids": [f"doc-{plan}", f"doc-{plan}-b"],
        "context": [first_chunk, f"Plan {plan} ships worldwide."],
        "answer": f"{refund} {second}",
    }


def truth() -> dict[str, bool]:
    """What a careful person says of each claim of the candidate's answers: supported or not."""
    out = {}
    for i in range(N):
        plan = _plan(i)
        out[f"Plan {plan} refunds within thirty days."] = i not in TRAPS
        out[f"Plan {plan} ships overnight."] = False
        out[f"Plan {plan} ships worldwide."] = True
    return out


def write_files(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    questions = [
        {
            "id": f"q{i:03d}",
            "question": f"What does plan {_plan(i)} offer on refunds and shipping?",
            "type": ("policy", "billing")[i % 2],
            "gold": [{"doc": f"doc-{_plan(i)}", "grade": 2}, {"doc": f"doc-{_plan(i)}-b", "grade": 1}],
        }
        for i in range(N)
    ]
    files = {
        "questions": (folder / "support-qa.jsonl", questions),
        "base": (folder / "chunks-512.jsonl", [_row(i, candidate=False) for i in range(N)]),
        "candidate": (folder / "chunks-256.jsonl", [_row(i, candidate=True) for i in range(N)]),
    }
    for path, records in files.values():
        path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return {name: path for name, (path, _) in files.items()}


def judge_config(base_url: str) -> str:
    """A runnable judge config for the fake judge, as an owner pastes it on the Judges page."""
    return json.dumps(
        {
            "name": "literal-judge-v1",
            "endpoint_kind": "vllm",
            "base_url": base_url,
            "model": "fake-judge",
            "temperature": 0,
            "seed": 7,
            "max_tokens": 200,
            "claim_prompt": "Split the answer into atomic factual claims.\nQuestion: {question}\nAnswer: {answer}",
            "prompt": "Is the claim supported by the context?\nContext:\n{context}\nClaim: {claim}",
            "limits": {"concurrency": 8, "max_retries": 2, "timeout_seconds": 10},
        },
        indent=1,
    )
