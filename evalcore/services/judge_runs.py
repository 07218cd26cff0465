"""Score a run with a runnable judge config, as a new run with lineage (runs are immutable).

``judge_run(run, config, claims)`` judges every row of ``run``: with ``claims="keep"`` each of the
row's claims gets a verdict; with ``"split"`` the answer is first split into claims by the
config's claim prompt. The answers are cached (see :mod:`evalcore.judging.runner`), so the job
can be cancelled, killed or re-run and resumes where it stopped without paying twice. At the end
one transaction writes the new run: the same questions, retrieval, context and answers, the new
claims with their verdicts and rationales, and the scores computed as on import (retrieval and
abstention as before, faithfulness from the new verdicts). Scores the old judge made (such as an
imported answer relevance) are not carried over: the new run's judge metrics are its judge's.

A claim the judge failed on (after its retries) keeps its text with ``"supported": null`` and
the reason; its row's faithfulness is undefined, and the run lists the failures.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

from django.db.models import Avg

from evalcore.engine import ChunkMap

from ..judging.client import Limits
from ..judging.prompts import CLAIMS, VERDICT, ItemText, Prompts
from ..judging.runner import (
    CallStats,
    JudgeUnavailable,
    cached_outputs,
    check_runnable,
    run_calls,
    tokens_cost,
)
from ..models import JudgeCall, JudgeConfig, Row, Run, RunChunk
from .importing import Progress, create_once, in_batches, no_progress
from .names import check_name
from .problems import UserFacingError
from .runs import QuestionIndex, store_rows
from .scoring import is_judge_metric

CLAIM_MODES = ("keep", "split")
SAMPLE_ROWS = 50
CHUNK = 256
#: Completion tokens assumed per call before the cache knows better.
DEFAULT_COMPLETION = {CLAIMS: 60, VERDICT: 40}
DEFAULT_CLAIMS_PER_ANSWER = 3.0
ASSUMED_SECONDS_PER_CALL = 1.0


class JudgeRunRefused(UserFacingError):
    pass


@dataclass(frozen=True)
class Estimate:
    """What judging would cost, from a sample of rows: calls, tokens, money and time (before starting)."""

    rows: int
    sampled_rows: int
    calls: int
    cached_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    currency: str
    seconds: float
    note: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def line(self) -> str:
        minutes = self.seconds / 60
        when = f"about {minutes:.0f} min" if minutes >= 1.5 else f"about {self.seconds:.0f} s"
        return (
            f"{self.calls:,} calls ({self.cached_calls:,} already in the cache, free), about "
            f"{self.prompt_tokens + self.completion_tokens:,} tokens, {self.currency}{self.cost:,.2f}, {when}"
        )


def _item(row: Row, claim: str = "") -> ItemText:
    return ItemText(
        question=row.question.text,
        context=tuple(chunk["text"] for chunk in row.context_chunks),
        answer=row.answer,
        claim=claim,
    )


def _judged_rows(run: Run) -> Iterator[list[Row]]:
    rows = Row.objects.filter(run=run).select_related("question").order_by("pk")
    return in_batches(rows.iterator(chunk_size=CHUNK), CHUNK)


def _claim_texts(rows: list[Row], prompts: Prompts, claims: str) -> dict[int, list[str] | None]:
    """The claims of each row to judge: its own, or the cached split of its answer (None: the split failed)."""
    if claims == "keep":
        return {row.pk: [c["text"] for c in row.claims or []] for row in rows}
    wanted = {row.pk: prompts.claims(_item(row)).key for row in rows if _splittable(row)}
    found = cached_outputs(prompts.config.config_hash, wanted.values())
    out: dict[int, list[str] | None] = {row.pk: [] for row in rows}
    for pk, key in wanted.items():
        out[pk] = list(found[key]["claims"]) if key in found else None
    return out


def _splittable(row: Row) -> bool:
    return not row.declined and bool(row.answer.strip())


def _split_requests(run: Run, prompts: Prompts) -> Iterator[Any]:
    for rows in _judged_rows(run):
        for row in rows:
            if _splittable(row):
                yield prompts.claims(_item(row))


def _verdict_requests(run: Run, prompts: Prompts, claims: str) -> Iterator[Any]:
    for rows in _judged_rows(run):
        texts = _claim_texts(rows, prompts, claims)
        for row in rows:
            if row.declined:
                continue
            for text in texts[row.pk] or []:
                yield prompts.verdict(_item(row, text))


def _count(requests: Iterator[Any]) -> int:
    return sum(1 for _ in requests)


def judge_run_check(*, run: Run, config: JudgeConfig, claims: str, name: str | None) -> str:
    """Refuse what cannot be judged (before a job exists); return the new run's name."""
    check_runnable(config)
    if claims not in CLAIM_MODES:
        raise JudgeRunRefused(f"claims must be 'keep' (the row's claims) or 'split' (split the answer), got {claims!r}")
    if claims == "split" and not config.claim_prompt:
        raise JudgeRunRefused(
            f"judge config {config.label} has no claim prompt: it cannot split answers (use claims 'keep')"
        )
    if claims == "keep" and run.judge_config_id == config.pk:
        raise JudgeRunRefused(f"run {run.name!r} was scored by {config.label} already")
    name = name or default_name(run, config)
    check_name(name, what="run")
    if Run.objects.filter(version=run.version, name=name).exists():
        raise JudgeRunRefused(f"a run named {name!r} already exists on {run.version.label}; choose another name")
    return name


def default_name(run: Run, config: JudgeConfig) -> str:
    return f"{run.name}-by-{config.label}"[:150]


def judge_run_estimate(*, run: Run, config: JudgeConfig, claims: str) -> Estimate:
    """Estimate calls, tokens, cost and time from a sample of rows (a read: nothing is called or written)."""
    prompts = Prompts(config)
    rows = Row.objects.filter(run=run, declined=False).select_related("question").order_by("pk")
    total = rows.count()
    step = max(1, total // SAMPLE_ROWS)
    sample = list(itertools.islice(rows.iterator(chunk_size=CHUNK), 0, None, step))[:SAMPLE_ROWS]
    completion = observed_completion(config)
    calls = cached = 0
    prompt_tokens = completion_tokens = 0.0
    per_answer = _claims_per_answer(run)
    requests = []
    for row in sample:
        if claims == "split" and _splittable(row):
            requests.append(prompts.claims(_item(row)))
            guessed = ItemText(
                row.question.text, tuple(c["text"] for c in row.context_chunks), row.answer, row.answer[:80]
            )
            verdict = prompts.verdict(guessed)
            calls_per = per_answer
            calls += calls_per
            prompt_tokens += calls_per * verdict.est_prompt_tokens
            completion_tokens += calls_per * completion[VERDICT]
        else:
            requests.extend(prompts.verdict(_item(row, c["text"])) for c in row.claims or [])
    have = set(cached_outputs(config.config_hash, {r.key for r in requests}))
    for request in requests:
        calls += 1
        if request.key in have:
            cached += 1
            continue
        prompt_tokens += request.est_prompt_tokens
        completion_tokens += completion[request.kind]
    scale = total / len(sample) if sample else 0.0
    limits = Limits.from_config(config.limits)
    paid = max(0.0, (calls - cached) * scale)
    seconds = paid * ASSUMED_SECONDS_PER_CALL / limits.concurrency
    if limits.requests_per_minute:
        seconds = max(seconds, paid / limits.requests_per_minute * 60)
    if limits.tokens_per_minute:
        seconds = max(seconds, (prompt_tokens + completion_tokens) * scale / limits.tokens_per_minute * 60)
    note = (
        f"from {len(sample)} of {total} answered rows; prompt tokens counted as characters / 4, "
        f"answers as {'the cache shows' if completion['observed'] else 'typical'} ({completion[VERDICT]:.0f} tokens a verdict)"
        + (f", about {per_answer:.1f} claims an answer" if claims == "split" else "")
        + f"; time assumes {ASSUMED_SECONDS_PER_CALL:g} s a call at concurrency {limits.concurrency}"
    )
    return Estimate(
        rows=total,
        sampled_rows=len(sample),
        calls=round(calls * scale),
        cached_calls=round(cached * scale),
        prompt_tokens=round(prompt_tokens * scale),
        completion_tokens=round(completion_tokens * scale),
        cost=tokens_cost(prompt_tokens * scale, completion_tokens * scale, config.price or {}),
        currency="$",
        seconds=seconds,
        note=note,
    )


def observed_completion(config: JudgeConfig) -> dict[str, Any]:
    observed = dict(
        JudgeCall.objects.filter(config_hash=config.config_hash)
        .values_list("kind")
        .annotate(avg=Avg("completion_tokens"))
        .values_list("kind", "avg")
    )
    return {
        CLAIMS: observed.get(CLAIMS) or DEFAULT_COMPLETION[CLAIMS],
        VERDICT: observed.get(VERDICT) or DEFAULT_COMPLETION[VERDICT],
        "observed": bool(observed),
    }


def _claims_per_answer(run: Run) -> float:
    summary = [len(c or []) for c in Row.objects.filter(run=run, declined=False).values_list("claims", flat=True)[:500]]
    with_claims = [n for n in summary if n]
    return sum(with_claims) / len(with_claims) if with_claims else DEFAULT_CLAIMS_PER_ANSWER


def progress_line(phase: str, stats: CallStats, total: int | None, price: dict[str, Any]) -> str:
    """How far a phase has got, in words: counts, failures, tokens, cost and the time left at this pace."""
    parts = [f"{phase}: {stats.done:,} of {total:,}" if total else f"{phase}: {stats.done:,}"]
    if stats.cached:
        parts.append(f"{stats.cached:,} from the cache")
    if stats.failed:
        parts.append(f"{stats.failed:,} failed")
    parts.append(f"{stats.tokens:,} tokens")
    if price:
        parts.append(f"${stats.cost(price):,.4f}")
    left = stats.seconds_left(total)
    if left is not None:
        parts.append(f"about {left / 60:.0f} min left" if left >= 90 else f"about {left:.0f} s left")
    return " · ".join(parts)


@dataclass(frozen=True)
class JudgeCallsOutcome:
    """The calls of one or two phases: their failures (input hash -> why) and what they cost."""

    failures: dict[str, str]
    stats: list[CallStats]

    def totals(self, price: dict[str, Any]) -> dict[str, Any]:
        calls = sum(s.answered + s.failed for s in self.stats)
        return {
            "items": sum(s.items for s in self.stats),
            "calls": calls,
            "from_cache": sum(s.cached for s in self.stats),
            "failed": len(self.failures),
            "http_requests": sum(s.http_requests for s in self.stats),
            "prompt_tokens": sum(s.prompt_tokens for s in self.stats),
            "completion_tokens": sum(s.completion_tokens for s in self.stats),
            "cost": round(sum(s.cost(price) for s in self.stats), 6),
        }


def judge_calls(
    config: JudgeConfig,
    phases: list[tuple[str, Callable[[], Iterator[Any]]]],
    *,
    progress: Progress = no_progress,
    should_stop: Callable[[], bool] = lambda: False,
) -> JudgeCallsOutcome:
    """Run each phase's requests through the cached runner, reporting progress in words."""
    failures: dict[str, str] = {}
    all_stats = []
    for number, (phase, requests) in enumerate(phases, start=1):
        total = _count(requests())
        stats = CallStats()
        all_stats.append(stats)
        label = f"{number}/{len(phases)} {phase}" if len(phases) > 1 else phase
        progress(0, total, label)

        def report(stats: CallStats, label: str = label, total: int = total) -> None:
            progress(stats.done, total, progress_line(label, stats, total, config.price or {}))

        failures.update(run_calls(config, requests(), stats=stats, on_progress=report, should_stop=should_stop))
        report(stats)
    return JudgeCallsOutcome(failures, all_stats)


@dataclass(frozen=True)
class JudgeRunResult:
    run: Run
    created: bool
    message: str
    totals: dict[str, Any]


def judge_run(
    *,
    run: Run,
    config: JudgeConfig,
    claims: str = "keep",
    name: str | None = None,
    user: Any = None,
    progress: Progress = no_progress,
    should_stop: Callable[[], bool] = lambda: False,
) -> JudgeRunResult:
    """Judge every row of ``run`` with ``config`` and store the result as a new run derived from it."""
    source_hash = hashlib.sha256(json.dumps([run.pk, config.config_hash, claims]).encode()).hexdigest()
    name = name or default_name(run, config)
    existing = Run.objects.filter(version=run.version, name=name).first()
    if existing is not None and existing.source_hash == source_hash:
        return JudgeRunResult(existing, False, f"Nothing new: run {name!r} was judged already.", {})
    name = judge_run_check(run=run, config=config, claims=claims, name=name)
    prompts = Prompts(config)
    phases: list[tuple[str, Callable[[], Iterator[Any]]]] = []
    if claims == "split":
        phases.append(("splitting answers into claims", lambda: _split_requests(run, prompts)))
    phases.append(("judging claims", lambda: _verdict_requests(run, prompts, claims)))
    outcome = judge_calls(config, phases, progress=progress, should_stop=should_stop)
    progress(0, run.row_count, "writing the new run")
    dropped = sorted(m for m in run.summary.get("metrics", []) if is_judge_metric(m) and m != "faithfulness")
    failed_rows = 0

    def create() -> Run:
        nonlocal failed_rows
        new = Run.objects.create(
            version=run.version,
            name=name,
            description=f"{run.name}, re-scored by judge {config.label} (claims {claims})",
            system_config=run.system_config,
            judge_config=config,
            derived_from=run,
            k=run.k,
            gain=run.gain,
            has_chunk_map=run.has_chunk_map,
            source_name=f"judged in the tool from run {run.name}",
            source_hash=source_hash,
            question_count=run.question_count,
            metadata={"lineage": {"run": run.pk, "judge_config": config.config_hash, "claims": claims}},
            created_by=user if getattr(user, "pk", None) else None,
        )
        chunks = list(RunChunk.objects.filter(run=run).values("chunk_id", "doc", "start", "end"))
        for batch in in_batches((RunChunk(run=new, **c) for c in chunks), 5000):
            RunChunk.objects.bulk_create(batch)
        chunk_map = ChunkMap(chunks) if chunks else None
        rows = _new_rows(run, prompts, claims, outcome.failures)

        def counted() -> Iterator[dict[str, Any]]:
            nonlocal failed_rows
            for row in rows:
                failed_rows += bool(row["metadata"].get("judge_failures"))
                yield row

        store_rows(
            new,
            counted(),
            QuestionIndex.load(run.version),
            chunk_map=chunk_map,
            progress=lambda written: progress(written, run.row_count, "writing the new run"),
        )
        return new

    new, created = create_once(create, existing=lambda: Run.objects.filter(version=run.version, name=name).first())
    totals = {**outcome.totals(config.price or {}), "failed_rows": failed_rows}
    if created:
        totals["dropped_metrics"] = dropped
        new.metadata = {**new.metadata, "judging": totals}
        Run.objects.filter(pk=new.pk).update(metadata=new.metadata)
    message = (
        f"Created run {name!r}: {run.name} re-scored by judge {config.label} ({totals['calls']:,} calls made, "
        f"{totals['from_cache']:,} answers from the cache, {totals['prompt_tokens'] + totals['completion_tokens']:,} tokens"
        + (f", ${totals['cost']:,.4f}" if config.price else "")
        + ")."
    )
    if failed_rows:
        message += (
            f" The judge failed on {totals['failed']} call(s), in {failed_rows} row(s): their faithfulness is undefined "
            f"(the reasons are on each row). Judge the run again under another name to retry only those."
        )
    if dropped:
        message += f" Not carried over (scored by the previous judge): {', '.join(dropped)}."
    return JudgeRunResult(new, created, message, totals)


def _new_rows(run: Run, prompts: Prompts, claims: str, failures: dict[str, str]) -> Iterator[dict[str, Any]]:
    """The source rows with the new claims and verdicts, as the import's row dicts."""
    config = prompts.config
    for rows in _judged_rows(run):
        texts = _claim_texts(rows, prompts, claims)
        keys = {
            (row.pk, i): prompts.verdict(_item(row, text)).key
            for row in rows
            if not row.declined
            for i, text in enumerate(texts[row.pk] or [])
        }
        verdicts = cached_outputs(config.config_hash, keys.values())
        for row in rows:
            problems = []
            new_claims = []
            if texts[row.pk] is None:
                key = prompts.claims(_item(row)).key
                problems.append({"call": "split", "error": failures.get(key, "no answer")})
            for i, text in enumerate([] if row.declined else texts[row.pk] or []):
                verdict = verdicts.get(keys[(row.pk, i)])
                if verdict is None:
                    error = failures.get(keys[(row.pk, i)], "no answer")
                    new_claims.append({"text": text, "supported": None, "error": error})
                    problems.append({"call": "verdict", "claim": i, "error": error})
                else:
                    claim = {"text": text, "supported": verdict["supported"]}
                    if verdict.get("rationale"):
                        claim["rationale"] = verdict["rationale"]
                    new_claims.append(claim)
            metadata = {k: v for k, v in (row.metadata or {}).items() if k != "imported_scores"}
            if problems:
                metadata["judge_failures"] = problems
            yield {
                "qid": row.question.qid,
                "retrieved": row.retrieved,
                "context_ids": row.context_ids or None,
                "context": row.context,
                "answer": row.answer,
                "declined": row.declined,
                "claims": new_claims,
                "scores": {},
                "metadata": metadata,
            }


def rescore_plan(*, base: Run, candidate: Run) -> tuple[Run, JudgeConfig]:
    """Which run to re-score, and with which config: the older of the two runs, with the newer run's judge.

    Refused when both runs were scored by the same judge (compare them as they are) or when the
    newer judge cannot be run by the tool.
    """
    if base.judge_config_id == candidate.judge_config_id:
        raise JudgeRunRefused(
            f"{base.name!r} and {candidate.name!r} were scored by the same judge config: compare them as they are"
        )
    older, newer = sorted((base, candidate), key=lambda r: (r.created_at, r.pk))
    config = newer.judge_config
    if config is None:
        raise JudgeRunRefused(f"the newer run {newer.name!r} has no judge config to re-score {older.name!r} with")
    try:
        check_runnable(config)
    except JudgeUnavailable as error:
        raise JudgeRunRefused(
            f"{error}. Or judge both runs with one runnable config (judge_run --run NAME --judge-config NAME)"
        ) from None
    return older, config
