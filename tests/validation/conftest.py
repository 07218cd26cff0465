"""Fixtures for the judge-validation tests: runs whose judge verdicts and human labels are chosen
item by item, so the report, the re-measurement and the exports can be checked against numbers
computed by hand.

Everything goes through the real import paths: the eval set and the run are imported from JSON
Lines (docs/formats.md), campaigns are created with ``campaign_create`` and people's labels are
imported with ``labels_import`` from CSV.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evalcore.models import Run
from tests.files import write_csv, write_jsonl  # noqa: F401  (used by the tests)

JUDGE = {
    "model": "gpt-x",
    "model_version": "2026-05",
    "prompt": "You check whether an answer is supported by the context. Answer SUPPORTED or UNSUPPORTED.",
    "temperature": 0.0,
    "claim_splitting": "llm-atomic-claims-v2",
    "library_versions": {"ragas": "0.3.9"},
}
TUNED_JUDGE = {**JUDGE, "prompt": JUDGE["prompt"] + "\nExamples: (few-shot examples from the disagreements)"}

TYPES = ("policy", "billing", "technical")

#: The spec's judge example: people and the judge on 200 answers (1 = supported).
SPEC_HUMAN = [1] * 150 + [0] * 50
SPEC_JUDGE = [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28


def qid_of(i: int) -> str:
    return f"q{i:04d}"


def human_why(qid: str) -> str:
    return f"HUMANWHY-{qid}"


def judge_why(qid: str) -> str:
    return f"JUDGEWHY-{qid}"






@dataclass
class Built:
    """A run with, per question, the judge's answer verdict (and per claim for claim runs)."""

    run: Run
    judge: dict[str, bool]  # question id -> the judge's verdict on the whole answer
    qtype: dict[str, str]
    claims: dict[str, list[bool]] = field(default_factory=dict)  # question id -> per-claim judge verdicts


def import_run(
    folder: Path,
    claim_verdicts: Sequence[Sequence[bool]],
    *,
    types: Sequence[str] = TYPES,
    evalset: str = "val",
    name: str = "base",
    judge_config: dict[str, Any] | None = None,
) -> Built:
    """Import an eval set with one question per entry and a run whose row i has claims judged ``claim_verdicts[i]``.

    A question's answer is judge-supported exactly when all its claims are. Every unsupported claim
    carries the rationale ``JUDGEWHY-<qid>``; supported ones say where the context states them.
    """
    from evalcore.services.evalsets import evalset_import
    from evalcore.services.runs import run_import

    folder.mkdir(parents=True, exist_ok=True)
    questions, rows = [], []
    judge, qtypes, claims_by_q = {}, {}, {}
    for i, flags in enumerate(claim_verdicts):
        qid = qid_of(i)
        qtype = types[i % len(types)]
        questions.append({"id": qid, "question": f"What is the refund window of plan {qid}?", "type": qtype, "answerable": True,
                          "reference_answer": "30 days.", "gold": [{"doc": f"doc-{qid}", "grade": 2}]})
        texts = [f"Claim {c + 1} of {qid}: the window is {10 + c} days." for c in range(len(flags))]
        rows.append({
            "id": qid,
            "retrieved": [f"doc-{qid}", "doc-other"],
            "context_ids": [f"doc-{qid}", "doc-other"],
            "context": [f"CONTEXT-{qid}: the refund window is 10 days.", f"Unrelated chunk for {qid}."],
            "answer": f"ANSWER-{qid}: " + " ".join(texts),
            "declined": False,
            "claims": [
                {"text": t, "supported": bool(s), "rationale": f"Stated in chunk 1 for {qid}." if s else judge_why(qid)}
                for t, s in zip(texts, flags)
            ],
            "scores": {"answer_relevance": 4},
        })
        judge[qid] = all(flags)
        qtypes[qid] = qtype
        claims_by_q[qid] = [bool(s) for s in flags]
    qpath = write_jsonl(folder / f"{evalset}.questions.jsonl", questions)
    rpath = write_jsonl(folder / f"{evalset}-{name}.rows.jsonl", rows)
    evalset_import(path=qpath, name=evalset)
    run = run_import(path=rpath, evalset=evalset, name=name, judge_config=judge_config or JUDGE).run
    return Built(run=run, judge=judge, qtype=qtypes, claims=claims_by_q)


def answer_claims(judge_supported: bool) -> list[bool]:
    """Claims that make the judge's answer verdict supported (one supported claim) or not (a second, unsupported one)."""
    return [True] if judge_supported else [True, False]


def import_labels(folder: Path, campaign, rows: Iterable[tuple[str, int | None, str, str, str]], name: str = "labels.csv"):
    """Import labels (question_id, claim_index, label, annotator, rationale) with the real CSV import."""
    from labelstudio_lite.labelling.services.label_import import labels_import

    folder.mkdir(parents=True, exist_ok=True)
    path = write_csv(folder / name, ["question_id", "claim_index", "label", "annotator", "rationale"],
                     [(q, "" if c is None else c, v, a, r) for q, c, v, a, r in rows])
    return labels_import(campaign=campaign, path=path)


def word(supported: int | bool) -> str:
    return "supported" if supported else "unsupported"


@dataclass
class SpecCase:
    """The spec's example as a run, with people's label of every question."""

    built: Built
    human: dict[str, int]  # question id -> people's label (1 supported)

    @property
    def run(self) -> Run:
        return self.built.run

    @property
    def judge(self) -> dict[str, int]:
        return {q: int(v) for q, v in self.built.judge.items()}

    def kind(self, qid: str) -> str:
        h, j = self.human[qid], self.judge[qid]
        if h == j:
            return "agree"
        return "false_pass" if j else "false_fail"

    def qids(self, kind: str) -> set[str]:
        return {q for q in self.human if self.kind(q) == kind}


@pytest.fixture(autouse=True)
def _fast_passwords_and_private_media(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.MEDIA_ROOT = str(tmp_path / "media")


def build_spec_case(folder: Path) -> SpecCase:
    """200 answers of three question types whose judge verdicts and people's labels reproduce the spec's table.

    The (human, judge) pairs are shuffled with a fixed seed, so every question type holds a mix of
    agreements, false passes and false fails.
    """
    pairs = list(zip(SPEC_HUMAN, SPEC_JUDGE))
    random.Random(3).shuffle(pairs)
    built = import_run(folder, [answer_claims(bool(j)) for _, j in pairs])
    human = {qid_of(i): h for i, (h, _) in enumerate(pairs)}
    assert [built.judge[qid_of(i)] for i in range(200)] == [bool(j) for _, j in pairs]
    return SpecCase(built=built, human=human)


def label_spec_campaign(case: SpecCase, campaign, folder: Path, *, only: Callable[[str], bool] = lambda qid: True) -> Any:
    """Import people's labels of a spec campaign (one external annotator, a rationale on every label)."""
    from labelstudio_lite.labelling.models import Item

    qids = Item.objects.filter(campaign=campaign).values_list("row__question__qid", flat=True)
    rows = [(q, None, word(case.human[q]), "rater-1", human_why(q)) for q in sorted(qids) if only(q)]
    return import_labels(folder / f"labels-{campaign.name}", campaign, rows)


def create_spec_campaign(case: SpecCase, name: str, folder: Path, *, heldout_fraction: float = 0.0, seed: int = 7,
                         user: Any = None, annotators: Iterable[Any] = ()):
    """An answer campaign of every item of the spec run (size 200), labelled as the spec says."""
    from labelstudio_lite.labelling.services.campaigns import campaign_create

    campaign = campaign_create(run=case.run, name=name, unit="answer", size=200, heldout_fraction=heldout_fraction,
                               overlap=1, seed=seed, user=user, annotators=annotators)
    label_spec_campaign(case, campaign, folder)
    return campaign


@contextmanager
def module_data(django_db_blocker):
    """Data shared by a module's tests: created once in a transaction rolled back after the module.

    Each test still runs in its own savepoint (pytest-django's ``db``), so what a test writes is
    undone after it and the shared rows stay as built.
    """
    from django.db import transaction

    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            yield
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


def shared_owner():
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user("shared-owner", password="shared-pass-123", role="eval_owner")


@pytest.fixture
def spec_case(db, tmp_path) -> SpecCase:
    return build_spec_case(tmp_path / "spec")


@pytest.fixture
def spec_campaign(spec_case, owner, annotator, tmp_path):
    """Create a labelled answer campaign over the spec run (every item)."""

    def make(name: str = "spec", *, heldout_fraction: float = 0.0, seed: int = 7):
        return create_spec_campaign(spec_case, name, tmp_path, heldout_fraction=heldout_fraction, seed=seed, user=owner,
                                    annotators=[annotator])

    return make
