"""Fixtures for the labelling tests: small hand-made runs full of marker strings, the demo run, campaigns.

Every row of a hand-made run carries distinctive markers in the places an annotator must never
see (the judge's rationales, scores, row metadata, retrieved ids beyond the context, the reference
answer), so the blindness tests can assert that none of them leaves the server.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalcore.models import Run
from tests.files import write_csv, write_jsonl  # noqa: F401  (used by the tests)

JUDGE = {
    "model": "gpt-x",
    "model_version": "2026-05",
    "prompt": "Is the claim supported by the context?\n{context}\n{claim}",
    "temperature": 0.0,
    "claim_splitting": "llm-atomic-claims-v2",
    "library_versions": {"ragas": "0.3.9"},
}

# Markers that must never reach an annotator (see test_blindness.py).
JUDGE_RATIONALE_MARK = "JUDGEWHYMARK"
FAITHFULNESS_SCORE = 0.31415926
RELEVANCE_SCORE = 2.7182818
METADATA_MARK = "ROWMETAMARK"
RETRIEVED_MARK = "RETRIEVEDONLYMARK"
REFERENCE_MARK = "REFERENCEANSWERMARK"
QUESTION_METADATA_MARK = "QUESTIONMETAMARK"


def qid_of(i: int) -> str:
    return f"q{i:04d}"






def default_verdicts(i: int, claims: int) -> list[bool]:
    """Every fourth answer has its last claim unsupported (so the judge says 'unsupported' for it)."""
    return [not (i % 4 == 3 and c == claims - 1) for c in range(claims)]


def build_run(
    folder: Path,
    *,
    n: int,
    evalset: str = "lab",
    name: str = "base",
    types: tuple[str, ...] = ("policy", "billing"),
    claims: int = 2,
    verdicts: Callable[[int, int], list[bool]] = default_verdicts,
    declined: Callable[[int], bool] = lambda i: False,
) -> Run:
    """Import an eval set of ``n`` questions and one run over it through the real import services."""
    from evalcore.services.evalsets import evalset_import
    from evalcore.services.runs import run_import

    folder.mkdir(parents=True, exist_ok=True)
    questions = []
    rows = []
    for i in range(n):
        qid = qid_of(i)
        qtype = types[i % len(types)]
        questions.append({
            "id": qid,
            "question": f"What is the refund window of plan {qid} ({qtype})?",
            "type": qtype,
            "answerable": True,
            "reference_answer": f"{REFERENCE_MARK}-{qid}",
            "gold": [{"doc": f"doc-{qid}-a", "grade": 2}],
            "owner_note": f"{QUESTION_METADATA_MARK}-{qid}",
        })
        is_declined = declined(i)
        texts = [f"Claim {c + 1} of {qid} says the window is {10 + c} days." for c in range(claims)]
        flags = verdicts(i, claims)
        rows.append({
            "id": qid,
            "retrieved": [f"doc-{qid}-a", f"doc-{qid}-b", f"{RETRIEVED_MARK}-{qid}"],
            "context_ids": [f"doc-{qid}-a", f"doc-{qid}-b"],
            "context": [f"First chunk for {qid}: the window is 10 days.", f"Second chunk for {qid}: exceptions exist."],
            "answer": "I could not find this." if is_declined else " ".join(texts),
            "declined": is_declined,
            "claims": [] if is_declined else [
                {"text": t, "supported": s, "rationale": f"{JUDGE_RATIONALE_MARK}-{qid}-{c}"}
                for c, (t, s) in enumerate(zip(texts, flags))
            ],
            "scores": {"faithfulness": FAITHFULNESS_SCORE, "answer_relevance": RELEVANCE_SCORE},
            "debug_trace": f"{METADATA_MARK}-{qid}",
        })
    qpath = write_jsonl(folder / f"{evalset}.questions.jsonl", questions)
    rpath = write_jsonl(folder / f"{evalset}-{name}.rows.jsonl", rows)
    evalset_import(path=qpath, name=evalset)
    return run_import(path=rpath, evalset=evalset, name=name, judge_config=JUDGE).run


@pytest.fixture(autouse=True)
def _fast_passwords_and_private_media(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.MEDIA_ROOT = str(tmp_path / "media")


@pytest.fixture
def small_run(db, tmp_path) -> Run:
    """12 answers of two slices, two claims each; answers 3, 7 and 11 have an unsupported claim."""
    return build_run(tmp_path / "small", n=12)


@pytest.fixture
def demo_run(db, tmp_path) -> Run:
    """The demo's baseline run (400 questions of four types), imported as load_demo does."""
    from evalcore.demo import write_demo_files
    from evalcore.services.evalsets import evalset_import
    from evalcore.services.runs import run_import

    paths = write_demo_files(tmp_path / "demo")
    evalset_import(path=paths["questions"], name="support-qa")
    return run_import(
        path=paths["base_rows"], evalset="support-qa@1", name="chunks-512", judge_config=json.loads(paths["judge"].read_text()),
        system_config=json.loads(paths["base_system"].read_text()), chunks_path=paths["base_chunks"], k=5,
    ).run


@pytest.fixture
def make_campaign(owner):
    """Create a campaign through the service; defaults: every answer, overlap 1, no held-out part."""
    from labelstudio_lite.labelling.services.campaigns import campaign_create

    def make(run: Run, name: str = "camp", **kwargs: Any):
        options = {"unit": "answer", "size": 10_000, "heldout_fraction": 0.0, "overlap": 1, "seed": 7, "user": owner}
        options.update(kwargs)
        return campaign_create(run=run, name=name, **options)

    return make


@pytest.fixture
def campaign(small_run, make_campaign, annotator, other_annotator):
    """All 12 answers of the small run, overlap 2, labelled by adam and bea."""
    return make_campaign(small_run, "faith", overlap=2, annotators=[annotator, other_annotator])


@pytest.fixture
def solo_campaign(small_run, make_campaign, annotator):
    """All 12 answers of the small run, overlap 1, adam alone."""
    return make_campaign(small_run, "solo", overlap=1, annotators=[annotator])


def label_everything(campaign, user, value: str | Callable[[Any], str] = "supported", rationale: str = "") -> list[Any]:
    """Let ``user`` label until nothing is left for them; return the labels."""
    from labelstudio_lite.labelling.services.assignment import next_item, submit_label

    labels = []
    while True:
        served = next_item(campaign=campaign, user=user)
        if served is None:
            return labels
        chosen = value(served.item) if callable(value) else value
        labels.append(submit_label(campaign=campaign, user=user, item_id=served.item.pk, value=chosen, rationale=rationale))
