"""Run a battery of bias probes through the judge runner on a campaign's tuning items, and keep its findings.

For one runnable judge config and one campaign, every claim of the campaign's *tuning* items (a
held-out item is never probed: its labels measure the judge, and a judge tuned on what it was
probed with would be measured on it) is judged three ways: as it is (the baseline), under each
probe (:mod:`evalcore.judging.probes`), and under the placebo (the unchanged prompt asked again
under another seed). The calls go through the cached runner (:func:`evalcore.services.judge_runs.judge_calls`):
a repeated battery makes no new call, a cancelled or killed one resumes where it stopped.
:func:`evalcore.engine.bias.bias_battery` turns the verdicts into flip rates beyond the placebo
with intervals clustered by item, Holm-corrected across probes; the findings are stored as a
:class:`~labelstudio_lite.labelling.models.BiasBattery`, which is never rewritten.

A separate probe set is a campaign of its own whose items are all tuning items (``--heldout 0``).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import IntegrityError, transaction

from evalcore.engine.bias import DIRECTIONS, TO_SUPPORTED, BatteryResult, ProbeFinding, bias_battery
from evalcore.engine.multiplicity import CORRECTIONS
from evalcore.judging.client import Limits
from evalcore.judging.probes import (
    BUILT_IN,
    BUILT_IN_NAMES,
    OWNER_KINDS,
    PLACEBO_NAME,
    ProbeError,
    ProbeSpec,
    placebo_seed,
    transform,
)
from evalcore.judging.prompts import VERDICT, CallRequest, ItemText, Prompts
from evalcore.judging.runner import cached_outputs, check_runnable, tokens_cost
from evalcore.models import JudgeConfig
from evalcore.services.importing import Progress, no_progress
from evalcore.services.judge_runs import ASSUMED_SECONDS_PER_CALL, Estimate, judge_calls, observed_completion
from evalcore.services.names import check_name
from evalcore.services.problems import UserFacingError

from ..models import BiasBattery, BiasProbe, Campaign, Item

METRIC = "faithfulness"
DEFAULT_BAR = 0.05
DEFAULT_ALPHA = 0.05


class BiasBatteryRefused(UserFacingError):
    pass


# ----------------------------------------------------------------------------------------------
# Probes: the built-in ones and the owners' (stored, versioned)
# ----------------------------------------------------------------------------------------------


def owner_spec(probe: BiasProbe) -> ProbeSpec:
    return ProbeSpec(
        name=probe.name,
        version=probe.version,
        kind=probe.kind,
        field=probe.field,
        text=probe.text,
        describes=probe.describes,
    )


def probe_add(*, name: str, kind: str, field: str, text: str, describes: str, user: Any = None) -> BiasProbe:
    """Store an owner's probe: a new version when the name exists with another text; the same probe is found again."""
    check_name(name, what="bias probe")
    if name in BUILT_IN_NAMES:
        raise BiasBatteryRefused(f"{name!r} is a built-in probe: give yours another name", field="name")
    if kind not in OWNER_KINDS:
        raise BiasBatteryRefused(f"kind must be one of {', '.join(OWNER_KINDS)}, got {kind!r}", field="kind")
    latest = BiasProbe.objects.filter(name=name).order_by("-version").first()
    version = latest.version + 1 if latest else 1
    try:
        spec = ProbeSpec(name=name, version=version, kind=kind, field=field, text=text, describes=describes)
    except ProbeError as error:
        raise BiasBatteryRefused(str(error), field="text" if "text" in str(error) else "field") from None
    if latest is not None and owner_spec(latest).pinned | {"version": 0} == spec.pinned | {"version": 0}:
        return latest
    try:
        with transaction.atomic():
            return BiasProbe.objects.create(
                name=name,
                version=version,
                kind=kind,
                field=field,
                text=text,
                describes=describes,
                spec_hash=spec.spec_hash,
                created_by=user if getattr(user, "pk", None) else None,
            )
    except IntegrityError:  # someone added the same version at the same moment: try again on top of it
        return probe_add(name=name, kind=kind, field=field, text=text, describes=describes, user=user)


def available_probes() -> list[ProbeSpec]:
    """Every probe an owner can run: the built-in ones, then the latest version of each owner probe."""
    latest: dict[str, BiasProbe] = {}
    for probe in BiasProbe.objects.order_by("name", "-version"):
        latest.setdefault(probe.name, probe)
    return [*BUILT_IN, *(owner_spec(p) for p in latest.values())]


def probe_specs(refs: list[str] | None = None) -> tuple[ProbeSpec, ...]:
    """The probes named (``name`` or ``name@vN``; none named: every available one), the placebo always last."""
    if not refs:
        chosen = [s for s in available_probes() if not s.is_placebo]
    else:
        chosen = []
        built_in = {s.name: s for s in BUILT_IN}
        for ref in refs:
            name, _, version = ref.partition("@v")
            if name == PLACEBO_NAME:
                continue
            if name in built_in and version in ("", str(built_in[name].version)):
                chosen.append(built_in[name])
                continue
            query = BiasProbe.objects.filter(name=name)
            probe = query.filter(version=int(version)).first() if version.isdigit() else query.first()
            if probe is None:
                known = ", ".join(s.label for s in available_probes())
                raise BiasBatteryRefused(f"there is no bias probe {ref!r}; known: {known}", field="probes")
            chosen.append(owner_spec(probe))
    placebo = next(s for s in BUILT_IN if s.is_placebo)
    return (*dict.fromkeys(chosen), placebo)


# ----------------------------------------------------------------------------------------------
# The plan: what a battery runs, checked before a job exists
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BiasPlan:
    campaign: Campaign
    config: JudgeConfig
    probes: tuple[ProbeSpec, ...]
    bar: float = DEFAULT_BAR
    alpha: float = DEFAULT_ALPHA
    correction: str = "holm"

    @property
    def source_hash(self) -> str:
        parts = [
            self.campaign.pk,
            self.config.config_hash,
            [p.spec_hash for p in self.probes],
            self.bar,
            self.alpha,
            self.correction,
        ]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def bias_plan(
    *,
    campaign: Campaign,
    config: JudgeConfig,
    probes: list[str] | None = None,
    bar: float = DEFAULT_BAR,
    alpha: float = DEFAULT_ALPHA,
    correction: str = "holm",
) -> BiasPlan:
    """Refuse what cannot run (a judge the tool cannot call, no tuning item, a bad bar); return the plan."""
    check_runnable(config)
    if isinstance(bar, bool) or not isinstance(bar, (int, float)) or not 0 <= bar < 1:
        raise BiasBatteryRefused(f"the bar is a flip rate in [0, 1) such as 0.05, got {bar!r}", field="bar")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise BiasBatteryRefused(f"alpha is a level in (0, 1) such as 0.05, got {alpha!r}", field="alpha")
    if correction not in CORRECTIONS:
        raise BiasBatteryRefused(
            f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}", field="correction"
        )
    if not Item.objects.filter(campaign=campaign, split=Item.Split.TUNING).exists():
        raise BiasBatteryRefused(
            f"campaign {campaign.name} has no tuning item to probe (held-out items are never probed): probe a "
            "campaign with a tuning split, or create a probe set with --heldout 0",
            field="campaign",
        )
    specs = probe_specs(probes)
    if len(specs) < 2:
        raise BiasBatteryRefused("name at least one probe besides the placebo", field="probes")
    return BiasPlan(
        campaign=campaign, config=config, probes=specs, bar=float(bar), alpha=float(alpha), correction=correction
    )


# ----------------------------------------------------------------------------------------------
# The calls
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbedClaim:
    item: int
    text: ItemText


def probed_claims(campaign: Campaign) -> list[ProbedClaim]:
    """Every claim of the campaign's tuning items, in item order (an answer item: each of its claims)."""
    items = (
        Item.objects.filter(campaign=campaign, split=Item.Split.TUNING)
        .select_related("row__question")
        .order_by("position")
    )
    out = []
    for item in items.iterator(chunk_size=256):
        row = item.row
        if row.declined:
            continue
        if item.claim_index is not None:
            claims = [item.claim["text"]] if item.claim else []
        else:
            claims = [c["text"] for c in row.claims or [] if c.get("text")]
        for claim in claims:
            text = ItemText(
                question=row.question.text,
                context=tuple(chunk["text"] for chunk in row.context_chunks),
                answer=row.answer,
                claim=claim,
            )
            out.append(ProbedClaim(item.pk, text))
    return out


def battery_requests(plan: BiasPlan, claims: list[ProbedClaim]) -> dict[str, list[CallRequest]]:
    """Per probe (and ``""`` for the baseline), one verdict request per claim, in the claims' order."""
    prompts = Prompts(plan.config)
    out: dict[str, list[CallRequest]] = {"": [prompts.verdict(c.text) for c in claims]}
    seed = placebo_seed(plan.config.seed)
    for spec in plan.probes:
        if spec.is_placebo:
            out[spec.name] = [prompts.verdict(c.text, seed=seed) for c in claims]
        else:
            out[spec.name] = [prompts.verdict(transform(spec, c.text)) for c in claims]
    return out


def _unique(requests: dict[str, list[CallRequest]]) -> Iterator[CallRequest]:
    seen: set[str] = set()
    for batch in requests.values():
        for request in batch:
            if request.key not in seen:
                seen.add(request.key)
                yield request


def bias_estimate(plan: BiasPlan) -> Estimate:
    """Calls, tokens, money and time the battery would cost (a read: nothing is called or written)."""
    claims = probed_claims(plan.campaign)
    unique = list(_unique(battery_requests(plan, claims)))
    have = set(cached_outputs(plan.config.config_hash, [r.key for r in unique]))
    todo = [r for r in unique if r.key not in have]
    completion = observed_completion(plan.config)
    prompt_tokens = sum(r.est_prompt_tokens for r in todo)
    completion_tokens = round(len(todo) * completion[VERDICT])
    limits = Limits.from_config(plan.config.limits)
    seconds = len(todo) * ASSUMED_SECONDS_PER_CALL / limits.concurrency
    if limits.requests_per_minute:
        seconds = max(seconds, len(todo) / limits.requests_per_minute * 60)
    if limits.tokens_per_minute:
        seconds = max(seconds, (prompt_tokens + completion_tokens) / limits.tokens_per_minute * 60)
    items = len({c.item for c in claims})
    note = (
        f"{len(claims):,} claims of {items:,} tuning items × {len(plan.probes)} probes (the placebo included) and the "
        f"unchanged prompt; prompt tokens counted as characters / 4, answers as "
        f"{'the cache shows' if completion['observed'] else 'typical'} ({completion[VERDICT]:.0f} tokens a verdict); "
        f"time assumes {ASSUMED_SECONDS_PER_CALL:g} s a call at concurrency {limits.concurrency}"
    )
    return Estimate(
        rows=items,
        sampled_rows=items,
        calls=len(unique),
        cached_calls=len(unique) - len(todo),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost=tokens_cost(prompt_tokens, completion_tokens, plan.config.price or {}),
        currency="$",
        seconds=seconds,
        note=note,
    )


# ----------------------------------------------------------------------------------------------
# Findings in words, and the run
# ----------------------------------------------------------------------------------------------


def _pct(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    rounded = round(100 * value)
    return f"−{-rounded}" if rounded < 0 else f"{rounded}"


def finding_words(finding: ProbeFinding, spec: ProbeSpec) -> str:
    """One (probe, direction) in words: "flips 12 % of unsupported claims to supported when ..., CI 7–18 %"."""
    flips = finding.flips
    if flips.n == 0:
        return f"{spec.name}: no claim at risk {spec.describes}"
    before, after = ("unsupported", "supported") if flips.direction == TO_SUPPORTED else ("supported", "unsupported")
    interval = f"CI {_pct(flips.low)}–{_pct(flips.high)} %"
    detail = (
        f"the judge's own noise {_pct(flips.placebo_rate)} % under the placebo; {flips.flips} of {flips.n} claims in "
        f"{flips.clusters} items flipped; adjusted p {finding.adjusted_p:.2g}"
    )
    if flips.estimate > 0:
        return f"flips {_pct(flips.estimate)} % of {before} claims to {after} {spec.describes}, {interval} ({detail})"
    return (
        f"flips no more {before} claims to {after} than the placebo does {spec.describes} "
        f"({_pct(flips.estimate)} %, {interval}; {detail})"
    )


def battery_verdict(result: BatteryResult, specs: dict[str, ProbeSpec], claims: int) -> str:
    if result.blocks:
        worst = sorted(result.blocking, key=lambda f: (f.flips.direction != TO_SUPPORTED, -f.flips.estimate))
        return "untrusted for gating: " + "; ".join(finding_words(f, specs[f.probe]) for f in worst)
    unsure = [f for f in result.findings if f.inconclusive and f.flips.n]
    line = (
        f"no probe flips verdicts beyond the placebo by more than the bar of {_pct(result.bar)} % "
        f"({result.family} tests on {claims} claims, {result.correction} correction at {result.alpha:g})"
    )
    if unsure:
        line += "; inconclusive (the interval reaches above the bar): " + ", ".join(
            f"{f.probe} {f.flips.direction.replace('_', ' ')}" for f in unsure
        )
    return line


def _finding_dict(finding: ProbeFinding, spec: ProbeSpec, applied: int) -> dict[str, Any]:
    flips = finding.flips

    def num(value: float) -> float | None:
        return None if math.isnan(value) else round(float(value), 6)

    return {
        "probe": spec.name,
        "version": spec.version,
        "describes": spec.describes,
        "direction": flips.direction,
        "applied_claims": applied,
        "n": flips.n,
        "clusters": flips.clusters,
        "flips": flips.flips,
        "placebo_flips": flips.placebo_flips,
        "only_probe": flips.only_probe,
        "only_placebo": flips.only_placebo,
        "flip_rate": num(flips.flip_rate),
        "placebo_rate": num(flips.placebo_rate),
        "estimate": num(flips.estimate),
        "low": num(flips.low),
        "high": num(flips.high),
        "design_effect": num(flips.design_effect),
        "p_value": num(flips.p_value),
        "adjusted_p": num(finding.adjusted_p),
        "significant": finding.significant,
        "exceeds_bar": finding.exceeds_bar,
        "blocks": finding.blocks,
        "inconclusive": finding.inconclusive,
        "words": finding_words(finding, spec),
    }


@dataclass(frozen=True)
class BiasBatteryOutcome:
    battery: BiasBattery
    created: bool
    totals: dict[str, Any]

    @property
    def message(self) -> str:
        calls = self.totals.get("calls", 0)
        cached = self.totals.get("from_cache", 0)
        return (
            f"Bias battery #{self.battery.pk} on {self.battery.campaign.name} with {self.battery.judge_config.label}: "
            f"{self.battery.verdict} ({calls:,} calls made, {cached:,} answers from the cache"
            + ("" if self.created else "; the same battery ran before: its stored findings")
            + ")."
        )


def _analyse(plan: BiasPlan, claims: list[ProbedClaim], requests: dict[str, list[CallRequest]]):
    answers = cached_outputs(plan.config.config_hash, {r.key for r in _unique(requests)})

    def verdicts(batch: list[CallRequest]) -> tuple[np.ndarray, np.ndarray]:
        got = [answers.get(r.key) for r in batch]
        return np.array([bool(a and a["supported"]) for a in got]), np.array([a is not None for a in got])

    base, base_ok = verdicts(requests[""])
    placebo_name = next(s.name for s in plan.probes if s.is_placebo)
    placebo, placebo_ok = verdicts(requests[placebo_name])
    clusters = np.array([c.item for c in claims])
    probes, applied = {}, {}
    for spec in plan.probes:
        if spec.is_placebo:
            continue
        probes[spec.name], ok = verdicts(requests[spec.name])
        changed = np.array([p.key != b.key for p, b in zip(requests[spec.name], requests[""])])
        applied[spec.name] = changed & ok & base_ok & placebo_ok
    result = bias_battery(
        base, probes, placebo, clusters, bar=plan.bar, alpha=plan.alpha, correction=plan.correction, applied=applied
    )
    return result, applied


def bias_battery_run(
    plan: BiasPlan,
    *,
    user: Any = None,
    progress: Progress = no_progress,
    should_stop: Callable[[], bool] = lambda: False,
) -> BiasBatteryOutcome:
    """Judge every tuning claim unchanged, under each probe and the placebo; store and return the findings."""
    claims = probed_claims(plan.campaign)
    if not claims:
        raise BiasBatteryRefused(f"the tuning items of {plan.campaign.name} hold no claim to judge")
    requests = battery_requests(plan, claims)
    phase = f"bias battery: {len(claims):,} claims × {len(plan.probes)} probes"
    outcome = judge_calls(plan.config, [(phase, lambda: _unique(requests))], progress=progress, should_stop=should_stop)
    totals = outcome.totals(plan.config.price or {})
    existing = BiasBattery.objects.filter(source_hash=plan.source_hash).first()
    if existing is not None:
        return BiasBatteryOutcome(existing, False, totals)
    result, applied = _analyse(plan, claims, requests)
    specs = {s.name: s for s in plan.probes}
    findings = [_finding_dict(f, specs[f.probe], int(applied[f.probe].sum())) for f in result.findings]
    try:
        with transaction.atomic():
            battery = BiasBattery.objects.create(
                campaign=plan.campaign,
                judge_config=plan.config,
                metric=METRIC,
                probes=[{**s.pinned, "shown": s.shown, "spec_hash": s.spec_hash} for s in plan.probes],
                bar=plan.bar,
                alpha=plan.alpha,
                correction=plan.correction,
                items=len({c.item for c in claims}),
                claims=len(claims),
                findings=findings,
                blocks_gating=result.blocks,
                verdict=battery_verdict(result, specs, len(claims)),
                totals={**totals, "failed_calls": len(outcome.failures), "directions": list(DIRECTIONS)},
                source_hash=plan.source_hash,
                created_by=user if getattr(user, "pk", None) else None,
            )
    except IntegrityError:  # the same battery finished at the same moment elsewhere
        return BiasBatteryOutcome(BiasBattery.objects.get(source_hash=plan.source_hash), False, totals)
    return BiasBatteryOutcome(battery, True, totals)
