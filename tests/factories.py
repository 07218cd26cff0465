"""Test data builders: eval sets, runs, campaigns, labels and verdicts, made through the real services.

Every builder is a plain function with keyword-only arguments, named for what it makes. Data goes
in as a user's would: files written as JSON Lines or CSV (docs/formats.md) and imported with the
import services; campaigns created with ``campaign_create``; labels given through the assignment
service (as an annotator labels) or imported from CSV; verdicts imported from JSON Lines. The
conftests of each test folder turn these into fixtures.

What lives here, by the folder that uses it most:

* every folder: the judge configs, ``make_eval_set``, ``make_run``, ``make_campaign``;
* ``tests/evalcore``: the five-question support set (``QUESTIONS``, ``ok_row``);
* ``tests/labelling``: ``make_marked_run``, whose rows carry markers an annotator must never see;
* ``tests/validation``: ``make_judged_run`` (judge verdicts chosen claim by claim) and the spec's
  judge example (``make_spec_case``, ``make_spec_campaign``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcore.demo import write_demo_files
from evalcore.models import EvalSetVersion, Run
from evalcore.services.evalsets import evalset_import
from evalcore.services.runs import run_import
from labelstudio_lite.labelling.models import Campaign, Item, Label
from labelstudio_lite.labelling.services.assignment import next_item, submit_label
from labelstudio_lite.labelling.services.campaigns import campaign_create
from labelstudio_lite.labelling.services.label_import import LabelImportResult, labels_import
from labelstudio_lite.labelling.services.verdicts import VerdictImportResult, verdicts_import
from tests.files import write_csv, write_jsonl

# ----------------------------------------------------------------------------------------------
# Judge configs
# ----------------------------------------------------------------------------------------------

#: The judge of most runs: one verdict per claim.
JUDGE: dict[str, Any] = {
    "model": "gpt-x",
    "model_version": "2026-05",
    "prompt": "Is the claim supported by the context?\n{context}\n{claim}",
    "temperature": 0.0,
    "claim_splitting": "llm-atomic-claims-v2",
    "library_versions": {"ragas": "0.3.9"},
}
#: The same judge, a later model version (its metrics are not compared with JUDGE's).
OTHER_JUDGE: dict[str, Any] = {**JUDGE, "model_version": "2026-09"}
#: The judge of the judge-validation runs, asked about whole answers.
ANSWER_JUDGE: dict[str, Any] = {
    **JUDGE,
    "prompt": "You check whether an answer is supported by the context. Answer SUPPORTED or UNSUPPORTED.",
}
#: ANSWER_JUDGE tuned on the disagreements people found: the new judge config of a re-measurement.
TUNED_JUDGE: dict[str, Any] = {
    **ANSWER_JUDGE,
    "prompt": ANSWER_JUDGE["prompt"] + "\nExamples: (few-shot examples from the disagreements)",
}


def runnable_judge(base_url: str, **changes: Any) -> dict[str, Any]:
    """A judge config the tool runs, for the fake judge (which reads the ``Context:`` and ``Claim:`` lines)."""
    return {
        "name": "literal-judge",
        "endpoint_kind": "vllm",
        "base_url": base_url,
        "model": "fake-judge",
        "prompt": "Is the claim supported by the context?\nContext:\n{context}\nClaim: {claim}",
        "claim_prompt": "Split the answer into atomic claims.\nQuestion: {question}\nAnswer: {answer}",
        "temperature": 0.0,
        "seed": 7,
        "max_tokens": 200,
        "limits": {"concurrency": 4, "max_retries": 3, "timeout_seconds": 5},
        "price": {"input_per_1k": 0.5, "output_per_1k": 1.5},
        **changes,
    }


def make_literal_run(
    *,
    folder: Path,
    n: int = 8,
    evalset: str = "lit",
    name: str = "base",
    claims: dict[str, list[dict[str, Any]]] | None = None,
    **options: Any,
) -> Run:
    """A run the fake judge scores predictably: row i has two claims; the first is stated in the context, the
    second only when i is a multiple of 4 (so its faithfulness is 1.0, else 0.5). The run's own judge passed every
    claim. ``claims`` gives some rows (by question id) other claims instead (rows never change once imported).
    ``options`` go to ``run_import`` (``judge_config``: JUDGE unless given)."""
    questions, rows = [], []
    for i in range(n):
        plan = f"p{i:03d}"
        second = f"Plan {plan} ships worldwide." if i % 4 == 0 else f"Plan {plan} ships overnight."
        first = f"Plan {plan} refunds within thirty days."
        questions.append(
            {
                "id": qid_of(i),
                "question": f"What does plan {plan} offer?",
                "type": TYPES[i % 3],
                "gold": [{"doc": f"doc-{plan}", "grade": 1}],
            }
        )
        rows.append(
            {
                "id": qid_of(i),
                "retrieved": [f"doc-{plan}"],
                "context_ids": [f"doc-{plan}", f"doc-{plan}-b"],
                "context": [first, f"Plan {plan} ships worldwide."],
                "answer": f"{first} {second}",
                "claims": (claims or {}).get(
                    qid_of(i), [{"text": first, "supported": True}, {"text": second, "supported": True}]
                ),
                "scores": {"answer_relevance": 4},
            }
        )
    make_eval_set(folder=folder, questions=questions, name=evalset)
    return make_run(folder=folder, rows=rows, evalset=evalset, name=name, **{"judge_config": JUDGE, **options})


# ----------------------------------------------------------------------------------------------
# Eval sets and runs
# ----------------------------------------------------------------------------------------------


def qid_of(i: int) -> str:
    """The id of the i-th question of a generated eval set: q0000, q0001, ..."""
    return f"q{i:04d}"


def make_eval_set(
    *, folder: Path, questions: Iterable[Any], name: str, file: str | None = None, **options: Any
) -> EvalSetVersion:
    """Write ``questions`` as JSON Lines in ``folder`` (``NAME.questions.jsonl``) and import them as eval set ``name``.

    ``options`` go to ``evalset_import`` as they are (``mode``, ``base_version``, ...). Return the version.
    """
    folder.mkdir(parents=True, exist_ok=True)
    path = write_jsonl(folder / (file or f"{name}.questions.jsonl"), questions)
    return evalset_import(path=path, name=name, **options).version


def make_run(
    *, folder: Path, rows: Iterable[Any], evalset: str, name: str, file: str | None = None, **options: Any
) -> Run:
    """Write ``rows`` as JSON Lines in ``folder`` (``EVALSET-NAME.rows.jsonl``) and import them as run ``name``.

    ``options`` go to ``run_import`` as they are (``k``, ``judge_config``, ...): no judge config unless given.
    """
    folder.mkdir(parents=True, exist_ok=True)
    path = write_jsonl(folder / (file or f"{evalset}-{name}.rows.jsonl"), rows)
    return run_import(path=path, evalset=evalset, name=name, **options).run


def make_demo_eval_set(*, folder: Path) -> dict[str, Path]:
    """Write the demo's files in ``folder`` and import its eval set (support-qa v1) as load_demo does; return the files."""
    paths = write_demo_files(folder)
    evalset_import(path=paths["questions"], name="support-qa")
    return paths


def demo_judge(paths: dict[str, Path]) -> dict[str, Any]:
    """The demo's judge config, read from its files."""
    return json.loads(paths["judge"].read_text())


# ----------------------------------------------------------------------------------------------
# The support set: five questions and a valid row for each (tests/evalcore)
# ----------------------------------------------------------------------------------------------

#: Five questions of two types: q4 is unanswerable, q5 has span gold.
QUESTIONS: list[dict[str, Any]] = [
    {
        "id": "q1",
        "question": "What is the refund window?",
        "type": "policy",
        "answerable": True,
        "reference_answer": "30 days.",
        "gold": [{"doc": "d1", "grade": 3}, {"doc": "d2", "grade": 1}],
    },
    {
        "id": "q2",
        "question": "What is the late fee?",
        "type": "billing",
        "answerable": True,
        "reference_answer": "5 %.",
        "gold": [{"doc": "d3", "grade": 2}],
    },
    {
        "id": "q3",
        "question": "How long is the notice period?",
        "type": "policy",
        "answerable": True,
        "reference_answer": "14 days.",
        "gold": [{"doc": "d4", "grade": 1}],
    },
    {
        "id": "q4",
        "question": "Who is the CEO's dentist?",
        "type": "billing",
        "answerable": False,
        "reference_answer": "",
        "gold": [],
    },
    {
        "id": "q5",
        "question": "What is the invoice date?",
        "type": "billing",
        "answerable": True,
        "reference_answer": "The 1st.",
        "gold": [{"doc": "d5", "grade": 2, "start": 100, "end": 180}],
    },
]


def ok_row(qid: str, **overrides: Any) -> dict[str, Any]:
    """A valid run row for question ``qid`` (two claims, one supported)."""
    row = {
        "id": qid,
        "retrieved": ["d1", "d9", "d3", "d4", "d5", "d7"],
        "context_ids": ["d1", "d9", "d3"],
        "context": "text one\n\ntext two\n\ntext three",
        "answer": "An answer.",
        "declined": False,
        "claims": [{"text": "A.", "supported": True, "rationale": "stated"}, {"text": "B.", "supported": False}],
        "scores": {"answer_relevance": 4},
    }
    row.update(overrides)
    return row


def ok_rows() -> list[dict[str, Any]]:
    """A valid row for every question of QUESTIONS."""
    return [ok_row(q["id"]) for q in QUESTIONS]


def claims(supported: int, total: int = 2) -> list[dict]:
    """``total`` claims of a row, the first ``supported`` of them supported."""
    return [{"text": f"C{i}.", "supported": i < supported} for i in range(total)]


# ----------------------------------------------------------------------------------------------
# Marked runs: every place an annotator must never see carries a marker (tests/labelling)
# ----------------------------------------------------------------------------------------------

JUDGE_RATIONALE_MARK = "JUDGEWHYMARK"
FAITHFULNESS_SCORE = 0.31415926
RELEVANCE_SCORE = 2.7182818
METADATA_MARK = "ROWMETAMARK"
RETRIEVED_MARK = "RETRIEVEDONLYMARK"
REFERENCE_MARK = "REFERENCEANSWERMARK"
QUESTION_METADATA_MARK = "QUESTIONMETAMARK"


def default_verdicts(i: int, claims: int) -> list[bool]:
    """Every fourth answer has its last claim unsupported (so the judge says 'unsupported' for it)."""
    return [not (i % 4 == 3 and c == claims - 1) for c in range(claims)]


def make_marked_run(
    *,
    folder: Path,
    n: int,
    evalset: str = "lab",
    name: str = "base",
    types: tuple[str, ...] = ("policy", "billing"),
    claims: int = 2,
    verdicts: Callable[[int, int], list[bool]] = default_verdicts,
    declined: Callable[[int], bool] = lambda i: False,
) -> Run:
    """Import an eval set of ``n`` questions and one run over it, every row full of marker strings.

    The markers stand in the judge's rationales, the scores, the row and question metadata, the
    retrieved ids beyond the context and the reference answer, so a test can assert that none of
    them reaches an annotator.
    """
    questions = []
    rows = []
    for i in range(n):
        qid = qid_of(i)
        qtype = types[i % len(types)]
        questions.append(
            {
                "id": qid,
                "question": f"What is the refund window of plan {qid} ({qtype})?",
                "type": qtype,
                "answerable": True,
                "reference_answer": f"{REFERENCE_MARK}-{qid}",
                "gold": [{"doc": f"doc-{qid}-a", "grade": 2}],
                "owner_note": f"{QUESTION_METADATA_MARK}-{qid}",
            }
        )
        is_declined = declined(i)
        texts = [f"Claim {c + 1} of {qid} says the window is {10 + c} days." for c in range(claims)]
        flags = verdicts(i, claims)
        rows.append(
            {
                "id": qid,
                "retrieved": [f"doc-{qid}-a", f"doc-{qid}-b", f"{RETRIEVED_MARK}-{qid}"],
                "context_ids": [f"doc-{qid}-a", f"doc-{qid}-b"],
                "context": [
                    f"First chunk for {qid}: the window is 10 days.",
                    f"Second chunk for {qid}: exceptions exist.",
                ],
                "answer": "I could not find this." if is_declined else " ".join(texts),
                "declined": is_declined,
                "claims": []
                if is_declined
                else [
                    {"text": t, "supported": s, "rationale": f"{JUDGE_RATIONALE_MARK}-{qid}-{c}"}
                    for c, (t, s) in enumerate(zip(texts, flags))
                ],
                "scores": {"faithfulness": FAITHFULNESS_SCORE, "answer_relevance": RELEVANCE_SCORE},
                "debug_trace": f"{METADATA_MARK}-{qid}",
            }
        )
    make_eval_set(folder=folder, questions=questions, name=evalset)
    return make_run(folder=folder, rows=rows, evalset=evalset, name=name, judge_config=JUDGE)


# ----------------------------------------------------------------------------------------------
# Judged runs: the judge's verdicts chosen claim by claim (tests/validation)
# ----------------------------------------------------------------------------------------------

#: The question types of a judged run, in turn.
TYPES = ("policy", "billing", "technical")


@dataclass
class JudgedRun:
    """A run with, per question, the judge's answer verdict (and per claim for claim runs)."""

    run: Run
    judge: dict[str, bool]  # question id -> the judge's verdict on the whole answer
    qtype: dict[str, str]
    claims: dict[str, list[bool]] = field(default_factory=dict)  # question id -> per-claim judge verdicts


def judge_why(qid: str) -> str:
    """The judge's rationale of every unsupported claim of question ``qid``."""
    return f"JUDGEWHY-{qid}"


def answer_claims(judge_supported: bool) -> list[bool]:
    """Claims that make the judge's answer verdict supported (one supported claim) or not (a second, unsupported one)."""
    return [True] if judge_supported else [True, False]


def make_judged_run(
    *,
    folder: Path,
    claim_verdicts: Sequence[Sequence[bool]],
    types: Sequence[str] = TYPES,
    evalset: str = "val",
    name: str = "base",
    judge_config: dict[str, Any] | None = None,
) -> JudgedRun:
    """Import an eval set with one question per entry and a run whose row i has claims judged ``claim_verdicts[i]``.

    A question's answer is judge-supported exactly when all its claims are. Every unsupported claim
    carries the rationale ``JUDGEWHY-<qid>``; supported ones say where the context states them.
    The judge config is ANSWER_JUDGE unless given.
    """
    questions, rows = [], []
    judge, qtypes, claims_by_q = {}, {}, {}
    for i, flags in enumerate(claim_verdicts):
        qid = qid_of(i)
        qtype = types[i % len(types)]
        questions.append(
            {
                "id": qid,
                "question": f"What is the refund window of plan {qid}?",
                "type": qtype,
                "answerable": True,
                "reference_answer": "30 days.",
                "gold": [{"doc": f"doc-{qid}", "grade": 2}],
            }
        )
        texts = [f"Claim {c + 1} of {qid}: the window is {10 + c} days." for c in range(len(flags))]
        rows.append(
            {
                "id": qid,
                "retrieved": [f"doc-{qid}", "doc-other"],
                "context_ids": [f"doc-{qid}", "doc-other"],
                "context": [f"CONTEXT-{qid}: the refund window is 10 days.", f"Unrelated chunk for {qid}."],
                "answer": f"ANSWER-{qid}: " + " ".join(texts),
                "declined": False,
                "claims": [
                    {
                        "text": t,
                        "supported": bool(s),
                        "rationale": f"Stated in chunk 1 for {qid}." if s else judge_why(qid),
                    }
                    for t, s in zip(texts, flags)
                ],
                "scores": {"answer_relevance": 4},
            }
        )
        judge[qid] = all(flags)
        qtypes[qid] = qtype
        claims_by_q[qid] = [bool(s) for s in flags]
    make_eval_set(folder=folder, questions=questions, name=evalset)
    run = make_run(folder=folder, rows=rows, evalset=evalset, name=name, judge_config=judge_config or ANSWER_JUDGE)
    return JudgedRun(run=run, judge=judge, qtype=qtypes, claims=claims_by_q)


# ----------------------------------------------------------------------------------------------
# Campaigns, labels and verdicts
# ----------------------------------------------------------------------------------------------


def make_campaign(
    *,
    run: Run,
    name: str = "camp",
    unit: str = "answer",
    size: int = 10_000,
    heldout_fraction: float = 0.0,
    overlap: int = 1,
    seed: int = 7,
    **options: Any,
) -> Campaign:
    """Create a campaign through ``campaign_create``; by default every answer of the run, overlap 1, nothing held out.

    ``options`` go to ``campaign_create`` as they are (``annotators``, ``user``, ``lease_seconds``, ...).
    """
    return campaign_create(
        run=run,
        name=name,
        unit=unit,
        size=size,
        heldout_fraction=heldout_fraction,
        overlap=overlap,
        seed=seed,
        **options,
    )


def label_items(
    *,
    campaign: Campaign,
    user: Any,
    value: str | Callable[[Item], str] = "supported",
    rationale: str = "",
    limit: int | None = None,
) -> list[Label]:
    """Let ``user`` label through the assignment service until nothing is left for them (or ``limit``
    labels); return the labels.

    ``value`` is the label of every item, or a function of the item served.
    """
    labels = []
    while limit is None or len(labels) < limit:
        served = next_item(campaign=campaign, user=user)
        if served is None:
            return labels
        chosen = value(served.item) if callable(value) else value
        labels.append(
            submit_label(campaign=campaign, user=user, item_id=served.item.pk, value=chosen, rationale=rationale)
        )
    return labels


def word(supported: int | bool) -> str:
    """The label of a verdict: supported or unsupported."""
    return "supported" if supported else "unsupported"


def import_labels(
    *,
    folder: Path,
    campaign: Campaign,
    rows: Iterable[tuple[str, int | None, str, str, str]],
    file: str = "labels.csv",
) -> LabelImportResult:
    """Import labels (question_id, claim_index, label, annotator, rationale) with the real CSV import."""
    folder.mkdir(parents=True, exist_ok=True)
    path = write_csv(
        folder / file,
        ["question_id", "claim_index", "label", "annotator", "rationale"],
        [(q, "" if c is None else c, v, a, r) for q, c, v, a, r in rows],
    )
    return labels_import(campaign=campaign, path=path)


def import_verdicts(
    *,
    folder: Path,
    campaign: Campaign,
    records: Iterable[dict[str, Any]],
    judge_config: dict[str, Any],
    file: str = "verdicts.jsonl",
    user: Any = None,
) -> VerdictImportResult:
    """Write a new judge config's verdicts (question_id, claim_index, supported, rationale) as JSON Lines and import them."""
    path = write_jsonl(folder / file, records)
    return verdicts_import(campaign=campaign, path=path, judge_config=judge_config, user=user)


# ----------------------------------------------------------------------------------------------
# The spec's judge example: 200 answers, people and the judge agreeing on 170 (tests/validation)
# ----------------------------------------------------------------------------------------------

#: People's label and the judge's verdict of each of the spec's 200 answers (1 = supported).
SPEC_HUMAN = [1] * 150 + [0] * 50
SPEC_JUDGE = [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28


def human_why(qid: str) -> str:
    """People's rationale of their label of question ``qid``."""
    return f"HUMANWHY-{qid}"


@dataclass
class SpecCase:
    """The spec's example as a run, with people's label of every question."""

    built: JudgedRun
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


def make_spec_case(*, folder: Path) -> SpecCase:
    """200 answers of three question types whose judge verdicts and people's labels reproduce the spec's table.

    The (human, judge) pairs are shuffled with a fixed seed, so every question type holds a mix of
    agreements, false passes and false fails.
    """
    pairs = list(zip(SPEC_HUMAN, SPEC_JUDGE))
    random.Random(3).shuffle(pairs)
    built = make_judged_run(folder=folder, claim_verdicts=[answer_claims(bool(j)) for _, j in pairs])
    human = {qid_of(i): h for i, (h, _) in enumerate(pairs)}
    assert [built.judge[qid_of(i)] for i in range(200)] == [bool(j) for _, j in pairs]
    return SpecCase(built=built, human=human)


def make_spec_campaign(
    *,
    case: SpecCase,
    name: str,
    folder: Path,
    heldout_fraction: float = 0.0,
    seed: int = 7,
    user: Any = None,
    annotators: Iterable[Any] = (),
) -> Campaign:
    """An answer campaign of every item of the spec run (size 200), labelled as the spec says.

    People's labels come from one external annotator, with a rationale on every label, imported
    from ``FOLDER/labels-NAME/labels.csv``.
    """
    campaign = make_campaign(
        run=case.run,
        name=name,
        size=200,
        heldout_fraction=heldout_fraction,
        seed=seed,
        user=user,
        annotators=annotators,
    )
    qids = Item.objects.filter(campaign=campaign).values_list("row__question__qid", flat=True)
    rows = [(q, None, word(case.human[q]), "rater-1", human_why(q)) for q in sorted(qids)]
    import_labels(folder=folder / f"labels-{campaign.name}", campaign=campaign, rows=rows)
    return campaign
