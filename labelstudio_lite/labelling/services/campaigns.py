"""Create labelling campaigns: a seeded, stratified, reproducible sample with fixed splits."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from evalcore.engine.allocation import disagreement_spread, neyman_allocation
from evalcore.engine.sampling import stratified_allocation
from evalcore.models import Row, Run
from evalcore.services.judge_fitness import judge_validation
from evalcore.services.names import InvalidName, check_name
from evalcore.services.planning import (
    DEFAULT_FALSE_FAIL_RATE,
    DEFAULT_MISS_RATE,
    DEFAULT_TARGET,
    LabelPlanning,
    plan_labels,
)
from evalcore.services.problems import UserFacingError
from evalcore.services.summaries import slice_name

from ..models import Campaign, CampaignAnnotator, Guideline, Item
from .assignment import release_leases_of
from .label_sets import FAITHFULNESS, LabelSet, LabelSetError, label_set, on_scale

MIN_RECOMMENDED = 200
#: How a campaign spreads its tuning labels over the strata: the verdict floor (the judge's rare verdict gets at
#: least a quarter) or Neyman's (where the judge is least reliable, for the corrected estimates).
ALLOCATIONS = ("floor", "neyman")
#: Neyman's guesses when none are given: people fail 15 % of what the judge passes and pass 50 % of what it fails.
DEFAULT_DISAGREEMENT = {True: 0.15, False: 0.5}


class CampaignError(UserFacingError):
    pass


@dataclass(frozen=True)
class Candidate:
    row_id: int
    claim_index: int | None
    qtype: str
    judge_supported: bool
    judge_score: float | None = None

    @property
    def stratum(self) -> tuple[str, bool]:
        return (self.qtype, self.judge_supported)


def stratum_label(key: tuple[str, bool]) -> str:
    return f"{key[0]} · judge {'supported' if key[1] else 'unsupported'}"


def answer_verdict(claims: list[dict[str, Any]], scores: dict[str, Any]) -> bool | None:
    """The judge's verdict on a whole answer: supported when every claim is (or faithfulness is 1)."""
    if claims:
        return all(bool(c.get("supported")) for c in claims)
    faithfulness = scores.get("faithfulness")
    if faithfulness is None:
        return None
    return float(faithfulness) >= 1.0


def population(run: Run, unit: str, labels: LabelSet | Campaign | None = None) -> list[Candidate]:
    """Every labellable item of a run for the metric ``labels`` validates (faithfulness by default).

    Faithfulness on a binary label set: answers with a judge verdict, or claims with one. Any other
    metric (or an ordinal scale): answers whose row carries the judge's score on the metric (see
    :mod:`.label_sets` for how the judge's score becomes its verdict and its point on the scale).
    """
    if labels is not None and (labels.metric != FAITHFULNESS or labels.scale == Campaign.Scale.ORDINAL):
        return _scored_population(run, unit, labels)
    out: list[Candidate] = []
    rows = (
        Row.objects.filter(run=run, declined=False)
        .values_list("pk", "question__qtype", "claims", "scores")
        .order_by("pk")
    )
    for pk, qtype, claims, scores in rows.iterator(chunk_size=5000):
        if unit == Campaign.Unit.ANSWER:
            verdict = answer_verdict(claims or [], scores or {})
            if verdict is not None:
                out.append(Candidate(pk, None, slice_name(qtype), verdict))
        else:
            for index, claim in enumerate(claims or []):
                if isinstance(claim.get("supported"), bool):
                    out.append(Candidate(pk, index, slice_name(qtype), claim["supported"]))
    return out


def _scored_population(run: Run, unit: str, labels: LabelSet | Campaign) -> list[Candidate]:
    if unit != Campaign.Unit.ANSWER:
        raise CampaignError(f"{labels.metric} is scored on whole answers: use unit 'answer'")
    found = []
    rows = Row.objects.filter(run=run, declined=False).values_list("pk", "question__qtype", "scores").order_by("pk")
    for pk, qtype, scores in rows.iterator(chunk_size=5000):
        value = (scores or {}).get(labels.metric)
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            found.append((pk, slice_name(qtype), float(value)))
    if not found or labels.scale == Campaign.Scale.BINARY:
        pass_at = 0.5 if labels.judge_pass_at is None else labels.judge_pass_at
        return [Candidate(pk, None, qtype, value >= pass_at) for pk, qtype, value in found]
    try:
        points = on_scale([v for _, _, v in found], low=labels.scale_min, high=labels.scale_max)
    except LabelSetError as error:
        raise CampaignError(f"run {run.name!r}, {labels.metric}: {error}") from None
    return [
        Candidate(pk, None, qtype, not point <= labels.fail_at, float(point))
        for (pk, qtype, _), point in zip(found, points, strict=True)
    ]


@dataclass(frozen=True)
class Plan:
    """What a campaign would sample (per stratum, how many exist and how many are taken) and what it will measure.

    ``precision`` is the planner's answer for this run's strata (None, with ``precision_error``, when
    the assumptions cannot be planned with).
    """

    unit: str
    size: int
    strata: list[dict[str, Any]]
    chosen: list[tuple[Candidate, str, float]] = field(repr=False)
    warnings: list[str]
    precision: LabelPlanning | None = None
    precision_error: str | None = None
    assumed_from: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, for the API: the strata, the warnings and the plan."""
        return {
            "unit": self.unit,
            "size": self.size,
            "sampled": self.total_sampled,
            "available": self.total_available,
            "strata": self.strata,
            "warnings": self.warnings,
            "precision": self.precision.as_dict() if self.precision else None,
            "precision_error": self.precision_error,
            "assumed_from": self.assumed_from,
        }

    @property
    def total_available(self) -> int:
        return sum(s["available"] for s in self.strata)

    @property
    def total_sampled(self) -> int:
        return sum(s["sampled"] for s in self.strata)


def check_allocation(allocation: str, disagreement: dict[bool, float] | None) -> dict[bool, float]:
    """Refuse an unknown allocation or a disagreement that is no share; return Neyman's guesses (defaults filled)."""
    if allocation not in ALLOCATIONS:
        raise CampaignError(
            f"allocation must be one of {', '.join(ALLOCATIONS)} (floor: the judge's rare verdict gets at least a "
            f"quarter of the sample; neyman: labels where the judge is least reliable), got {allocation!r}",
            field="allocation",
        )
    out = {**DEFAULT_DISAGREEMENT, **(disagreement or {})}
    for verdict, value in out.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
            word = "passed" if verdict else "failed"
            raise CampaignError(
                f"the disagreement on answers the judge {word} is a share from 0 to 1, got {value!r}",
                field=f"{'pass' if verdict else 'fail'}_disagreement",
            )
    return out


def allocation_options(data: dict[str, Any]) -> dict[str, Any]:
    """The allocation and Neyman's guessed disagreement per verdict among a form's, a request's or a command's
    values (``pass_disagreement``: the share of the judge's passes people fail; blank ones take the defaults)."""
    guesses = {True: data.get("pass_disagreement"), False: data.get("fail_disagreement")}
    return {
        "allocation": data.get("allocation") or "floor",
        "disagreement": {verdict: value for verdict, value in guesses.items() if value is not None},
    }


def _allocations(
    groups: dict[tuple[str, bool], list[Candidate]],
    size: int,
    heldout_fraction: float,
    allocation: str,
    disagreement: dict[bool, float],
) -> tuple[dict[tuple[str, bool], int], dict[tuple[str, bool], int]]:
    """How many held-out and tuning items each stratum gives.

    ``floor``: the verdict-floor allocation of the whole sample, each stratum's share split by the
    held-out fraction (as campaigns always did). ``neyman``: the held-out split first, by the verdict
    floor at random within its strata and apart; then the tuning split from the items it left, by
    Neyman's allocation on the judge's guessed disagreement per verdict.
    """
    sizes = {key: len(items) for key, items in groups.items()}
    if allocation == "floor":
        whole = stratified_allocation(sizes, size)
        held = {key: int(round(whole.get(key, 0) * heldout_fraction)) for key in groups}
        return held, {key: whole.get(key, 0) - held[key] for key in groups}
    heldout_size = int(round(min(size, sum(sizes.values())) * heldout_fraction))
    held = stratified_allocation(sizes, heldout_size) if heldout_size else {}
    held = {key: held.get(key, 0) for key in groups}
    left = {key: sizes[key] - held[key] for key in groups}
    budget = max(0, min(size - heldout_size, sum(left.values())))
    if not budget:
        return held, {key: 0 for key in groups}
    spread = {key: disagreement_spread(disagreement[key[1]]) for key in groups}
    tuning = neyman_allocation(left, budget, spread=spread)
    return held, {key: tuning.get(key, 0) for key in groups}


def _stratified_sample(
    candidates: list[Candidate],
    *,
    size: int,
    seed: int,
    heldout_fraction: float,
    allocation: str = "floor",
    disagreement: dict[bool, float] | None = None,
) -> tuple[list[tuple[Candidate, str, float]], list[dict[str, Any]]]:
    """Sample by (slice, judge verdict) stratum: the held-out split first, at random and apart, then the tuning split.

    How many of each (:func:`_allocations`) depends on ``allocation``; within a stratum the
    held-out items are the first of a seeded shuffle of its sample, and the union of the two splits is
    a simple random sample of its items, so each item's inclusion probability is its
    stratum's ``n_h / N_h`` (recorded), and every estimate weights by it (``N_h / n_h`` per item).
    Returns the chosen items with their split and sampling weight, and a summary row per stratum.
    Deterministic for a seed and the same candidates.
    """
    disagreement = check_allocation(allocation, disagreement)
    groups: dict[tuple[str, bool], list[Candidate]] = {}
    for candidate in candidates:
        groups.setdefault(candidate.stratum, []).append(candidate)
    held, tuning = _allocations(groups, size, heldout_fraction, allocation, disagreement)
    rng = random.Random(seed)
    chosen: list[tuple[Candidate, str, float]] = []
    strata = []
    for key in sorted(groups, key=lambda k: (k[0], not k[1])):
        members = groups[key]
        h, t = held.get(key, 0), tuning.get(key, 0)
        n = h + t
        picked = rng.sample(members, n) if n < len(members) else list(members)
        rng.shuffle(picked)
        weight = len(members) / n if n else 0.0
        for i, candidate in enumerate(picked):
            chosen.append((candidate, Item.Split.HELDOUT if i < h else Item.Split.TUNING, weight))
        strata.append(
            {
                "stratum": stratum_label(key),
                "slice": key[0],
                "judge_supported": key[1],
                "available": len(members),
                "sampled": n,
                "heldout": h,
                "tuning": t,
                "inclusion_probability": n / len(members) if members else 0.0,
                "allocation": allocation,
            }
        )
    return chosen, strata


def _create_items(campaign: Campaign, chosen: list[tuple[Candidate, str, float]], *, order_seed: int) -> None:
    """Write the sampled items, handed out in a seeded shuffled order."""
    order = list(range(len(chosen)))
    random.Random(order_seed).shuffle(order)
    Item.objects.bulk_create(
        [
            Item(
                campaign=campaign,
                row_id=candidate.row_id,
                claim_index=candidate.claim_index,
                split=split,
                stratum=stratum_label(candidate.stratum),
                judge_supported=candidate.judge_supported,
                judge_score=candidate.judge_score,
                sampling_weight=weight,
                inclusion_probability=1.0 / weight if weight else None,
                position=order[i],
                overlap=campaign.overlap,
            )
            for i, (candidate, split, weight) in enumerate(chosen)
        ],
        batch_size=2000,
    )


def _check_new_name(name: str) -> None:
    try:
        check_name(name, what="campaign")
    except InvalidName as error:
        raise CampaignError(str(error), field="name") from None
    if Campaign.objects.filter(name=name).exists():
        raise CampaignError(f"a campaign named {name!r} already exists; choose another name", field="name")


def _assumed_miss_rate(run: Run, miss_rate: float | None) -> tuple[float, str]:
    """The miss rate to plan with: the one given, else the last validation of the run's judge, else the default."""
    if miss_rate is not None:
        return miss_rate, "typed in"
    validation = judge_validation(run.judge_config) if run.judge_config_id else None
    if validation is not None and validation.miss_rate:
        return validation.miss_rate, f"the last validation of this judge (campaign {validation.campaign})"
    if validation is not None and validation.miss_rate == 0 and validation.miss_high:
        # planning at a measured 0 would promise intervals no sample delivers: take the interval's upper end
        return validation.miss_high, (
            f"the upper end of the last validation's interval (campaign {validation.campaign} measured 0 %)"
        )
    return DEFAULT_MISS_RATE, "a default: this judge was never validated"


def plan_assumptions(data: dict[str, Any]) -> dict[str, float]:
    """The plan's assumptions among a form's or a request's values (blank ones left to :func:`plan_campaign`)."""
    return {key: data[key] for key in ("miss_rate", "false_fail_rate", "target") if data.get(key) is not None}


def plan_campaign(
    *,
    run: Run,
    unit: str,
    size: int,
    seed: int = 7,
    heldout_fraction: float = 0.3,
    overlap: int = 1,
    miss_rate: float | None = None,
    false_fail_rate: float = DEFAULT_FALSE_FAIL_RATE,
    target: float = DEFAULT_TARGET,
    labels: LabelSet | None = None,
    allocation: str = "floor",
    disagreement: dict[bool, float] | None = None,
) -> Plan:
    """Return the sample a campaign with these settings takes (the same seed gives the same items), and its plan.

    The plan (:func:`evalcore.services.planning.plan_labels`) predicts the judge report's half-widths
    from the run's strata, the assumed judge error rates (the miss rate of the judge's last
    validation unless one is given) and the overlap and held-out fraction; and the items ``target``
    (a half-width of the miss rate) needs. ``allocation="neyman"`` spreads the tuning items where the
    judge is least reliable (``disagreement``: people's guessed disagreement with each verdict, True
    for the answers it passed); the held-out split stays drawn at random and apart.
    """
    if unit not in Campaign.Unit.values:
        raise CampaignError(f"unit must be 'answer' or 'claim', got {unit!r}", field="unit")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise CampaignError(f"size must be a positive number of items, got {size!r}", field="size")
    if not 0.0 <= heldout_fraction <= 1.0:
        raise CampaignError(
            f"the held-out fraction must be between 0 and 1, got {heldout_fraction}", field="heldout_fraction"
        )
    candidates = population(run, unit, labels)
    if not candidates:
        what = (
            "answers with judge verdicts (claims or a faithfulness score)"
            if unit == "answer"
            else "claims with judge verdicts"
        )
        if labels is not None and (labels.metric != FAITHFULNESS or labels.scale == Campaign.Scale.ORDINAL):
            what = f"answers with a judge score on {labels.metric}"
        raise CampaignError(f"run {run.name!r} has no {what} to label", field="run")
    chosen, strata = _stratified_sample(
        candidates,
        size=size,
        seed=seed,
        heldout_fraction=heldout_fraction,
        allocation=allocation,
        disagreement=disagreement,
    )
    warnings = []
    taken = len(chosen)
    if taken < MIN_RECOMMENDED:
        warnings.append(
            f"{taken} items is below the 200 the spec recommends per judge metric: kappa and the miss rate will "
            f"have wide intervals" + (" (the run has no more)" if taken == len(candidates) else "")
        )
    failures = sum(1 for c, _, _ in chosen if not c.judge_supported)
    if failures < 30:
        warnings.append(
            f"only {failures} sampled items are ones the judge failed: the miss rate will rest on few items"
        )
    assumed_miss, assumed_from = _assumed_miss_rate(run, miss_rate)
    precision = error = None
    try:
        precision = plan_labels(
            size=size,
            target=target,
            miss_rate=assumed_miss,
            false_fail_rate=false_fail_rate,
            strata=Counter(c.stratum for c in candidates),
            heldout_fraction=heldout_fraction,
            overlap=overlap,
        )
    except UserFacingError as exc:
        error = str(exc)
    return Plan(
        unit=unit,
        size=size,
        strata=strata,
        chosen=chosen,
        warnings=warnings,
        precision=precision,
        precision_error=error,
        assumed_from=assumed_from,
    )


def campaign_create(
    *,
    run: Run,
    name: str,
    unit: str,
    size: int,
    heldout_fraction: float = 0.3,
    overlap: int = 1,
    seed: int = 7,
    judge_question: str | None = None,
    guidance: str = "",
    annotators: Iterable[Any] = (),
    lease_seconds: int | None = None,
    user: Any = None,
    labels: LabelSet | None = None,
    allocation: str = "floor",
    disagreement: dict[bool, float] | None = None,
) -> Campaign:
    """Create a campaign and its items in one transaction; the sample and splits never change.

    ``labels`` is the metric validated and its label set (:func:`.label_sets.label_set`; faithfulness,
    supported / unsupported, by default); ``guidance`` becomes the guideline's version 1.
    ``annotators`` are users or usernames; an unknown username is refused before anything is sampled.
    ``allocation`` and ``disagreement`` as in :func:`plan_campaign`: each item records its inclusion probability.
    """
    _check_new_name(name)
    annotators = _users(annotators)
    if isinstance(overlap, bool) or not isinstance(overlap, int) or not 1 <= overlap <= 20:
        raise CampaignError(
            f"overlap is how many different annotators label each item (1 to 20), got {overlap!r}", field="overlap"
        )
    labels = labels or label_set()
    plan = plan_campaign(
        run=run,
        unit=unit,
        size=size,
        seed=seed,
        heldout_fraction=heldout_fraction,
        labels=labels,
        allocation=allocation,
        disagreement=disagreement,
    )
    default_question = (
        Campaign.DEFAULT_QUESTIONS[unit]
        if labels.metric == FAITHFULNESS and labels.scale == Campaign.Scale.BINARY
        else labels.question
    )
    with transaction.atomic():
        campaign = Campaign.objects.create(
            name=name,
            run=run,
            unit=unit,
            **labels.fields(),
            judge_question=judge_question or default_question,
            guidance=guidance,
            size=size,
            seed=seed,
            heldout_fraction=heldout_fraction,
            overlap=overlap,
            lease_seconds=lease_seconds,  # None: LABEL_LEASE_SECONDS, as it is set at each hand-out
            strata=plan.strata,
            allocation=allocation,
            created_by=user,
        )
        Guideline.objects.create(campaign=campaign, version=1, text=guidance, created_by=user)
        _create_items(campaign, plan.chosen, order_seed=seed + 1)
        campaign_set_annotators(campaign=campaign, users=annotators)
    return campaign


def campaign_new_guideline(*, campaign: Campaign, text: str, user: Any = None) -> Guideline:
    """Write the guideline's next version: annotators see it from now on, and their labels record it.

    Versions are frozen; a certificate measured under an older version reads stale.
    """
    text = (text or "").strip()
    with transaction.atomic():
        Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
        current = campaign.guideline
        if current is not None and current.text == text:
            raise CampaignError(
                f"the guideline is already this text (version {current.version}): nothing to change", field="text"
            )
        guideline = Guideline.objects.create(
            campaign=campaign, version=(current.version + 1) if current else 1, text=text, created_by=user
        )
    campaign.__dict__["guideline"] = guideline
    return guideline


def _users(users: Iterable[Any]) -> list[Any]:
    """The users as given, usernames looked up (at once; unknown names are refused together)."""
    users = list(users)
    names = [u for u in users if isinstance(u, str)]
    found = {u.username: u for u in get_user_model().objects.filter(username__in=names)} if names else {}
    missing = sorted(set(names) - set(found))
    if missing:
        raise CampaignError(f"no such user(s): {', '.join(missing)}", field="annotators")
    return [found[u] if isinstance(u, str) else u for u in users]


def campaign_set_annotators(*, campaign: Campaign, users: Iterable[Any]) -> None:
    """Assign annotators, users or usernames (adding only; labels already given stay); deactivated people are refused."""
    users = _users(users)
    inactive = sorted(user.username for user in users if not user.is_active)
    if inactive:
        raise CampaignError(
            f"deactivated, so they cannot label: {', '.join(inactive)} (bring them back on the People page)",
            field="annotators",
        )
    for user in users:
        CampaignAnnotator.objects.get_or_create(campaign=campaign, user=user)


def campaign_remove_annotator(*, campaign: Campaign, user: Any) -> Any:
    """Unassign an annotator (a user or a username) and return the user; their labels stay, their active leases are released."""
    (user,) = _users([user])
    with transaction.atomic():
        CampaignAnnotator.objects.filter(campaign=campaign, user=user).delete()
        release_leases_of(campaign=campaign, user=user)
    return user


def campaign_set_thresholds(*, campaign: Campaign, fit_kappa: float, fit_miss_rate: float) -> Campaign:
    """Set when the judge report calls the judge fit to gate: kappa at least ``fit_kappa`` and a miss rate at most ``fit_miss_rate``."""
    if isinstance(fit_kappa, bool) or not isinstance(fit_kappa, int | float) or not -1.0 <= fit_kappa <= 1.0:
        raise CampaignError(f"the kappa threshold is a number from -1 to 1, got {fit_kappa!r}")
    if isinstance(fit_miss_rate, bool) or not isinstance(fit_miss_rate, int | float) or not 0.0 <= fit_miss_rate <= 1.0:
        raise CampaignError(f"the miss-rate threshold is a share from 0 to 1, got {fit_miss_rate!r}")
    campaign.fit_kappa, campaign.fit_miss_rate = float(fit_kappa), float(fit_miss_rate)
    campaign.save(update_fields=["fit_kappa", "fit_miss_rate"])
    return campaign


def campaign_fresh_heldout(*, campaign: Campaign, name: str, size: int, user: Any = None) -> Campaign:
    """Sample a fresh held-out set: new items of the same run, none already in ``campaign``, all held out.

    Used once the held-out split is spent (a re-measurement was looked at and the judge tuned again).
    """
    _check_new_name(name)
    used = set(
        Item.objects.filter(
            campaign__run=campaign.run, campaign__unit=campaign.unit, campaign__metric=campaign.metric
        ).values_list("row_id", "claim_index")
    )
    fresh = [c for c in population(campaign.run, campaign.unit, campaign) if (c.row_id, c.claim_index) not in used]
    if not fresh:
        raise CampaignError(
            f"every item of run {campaign.run.name!r} was already sampled: there is nothing fresh to hold out"
        )
    chosen, strata = _stratified_sample(fresh, size=size, seed=campaign.seed + 1000, heldout_fraction=1.0)
    with transaction.atomic():
        new = Campaign.objects.create(
            name=name,
            run=campaign.run,
            unit=campaign.unit,
            metric=campaign.metric,
            shows=campaign.shows,
            scale=campaign.scale,
            pass_word=campaign.pass_word,
            fail_word=campaign.fail_word,
            scale_min=campaign.scale_min,
            scale_max=campaign.scale_max,
            fail_at=campaign.fail_at,
            judge_pass_at=campaign.judge_pass_at,
            judge_question=campaign.judge_question,
            guidance=campaign.guidance,
            size=size,
            seed=campaign.seed + 1000,
            heldout_fraction=1.0,
            overlap=campaign.overlap,
            lease_seconds=campaign.lease_seconds,
            strata=strata,
            fit_kappa=campaign.fit_kappa,
            fit_miss_rate=campaign.fit_miss_rate,
            parent=campaign,
            created_by=user,
        )
        guideline = campaign.guideline
        Guideline.objects.create(campaign=new, version=1, text=guideline.text if guideline else "", created_by=user)
        _create_items(new, chosen, order_seed=campaign.seed + 1001)
        campaign_set_annotators(campaign=new, users=campaign.annotators.filter(is_active=True))
    return new
