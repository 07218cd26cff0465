"""The judge beside people: ordinal agreement, the human ceiling, the chance baseline and the alternative annotator test.

* **Ordinal campaigns**: weighted kappa (linear and quadratic, Fleiss-Cohen-Everitt intervals)
  between people's final score and the judge's score on the scale; the failure-class miss rate at
  the threshold is the binary report's (a score at or below the threshold is the failure class).
* **The human ceiling**: how well people agree with each other (Cohen's kappa over pairs of
  annotators on the items both labelled, Krippendorff's alpha with a unit-bootstrap interval)
  beside how well the judge agrees with people on the same items.
* **The chance baseline**: the agreement of always answering people's majority class, beside
  the judge's raw agreement.
* **The alternative annotator test** (Calderon, Reichart and Dror, ACL 2025), where at least three
  annotators labelled the same items.

The statistics are the engine's; this module only gathers the labels.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalcore.engine.agreement import kappa_interval
from evalcore.engine.alt_test import alternative_annotator_test
from evalcore.engine.reliability import krippendorff_alpha_interval, majority_baseline
from evalcore.engine.weighted_kappa import weighted_kappa_interval

from ..models import Adjudication, Campaign, Label
from ..results import Result
from .judge_stats import Pair, finite

ALT_TEST_MIN_ANNOTATORS = 3
#: The alternative annotator test's items per annotator (the authors' advice for the t-test).
ALT_TEST_MIN_ITEMS = 30


@dataclass(frozen=True)
class KappaLine(Result):
    estimate: float | None
    low: float | None
    high: float | None
    n: int
    undefined: str | None = None


def _kappa_line(est: Any, n: int) -> KappaLine:
    return KappaLine(finite(est.estimate), finite(est.low), finite(est.high), n, est.undefined_reason or None)


@dataclass(frozen=True)
class OrdinalStats(Result):
    """Weighted kappa of the judge's scores against people's final scores on the same items."""

    scale: list[int]
    fail_at: float
    n: int
    linear: KappaLine
    quadratic: KappaLine
    exact_agreement: float | None


@dataclass(frozen=True)
class Ceiling(Result):
    """People against people on the items several labelled, beside the judge against people on those items."""

    items: int
    annotators: int
    people_kappa: KappaLine | None  # the mean over pairs of annotators, with the widest pair's interval ends
    pairs: list[dict[str, Any]]
    alpha: KappaLine | None
    alpha_level: str
    judge_kappa: KappaLine | None  # the judge against people's final label on the same items
    sentence: str


@dataclass(frozen=True)
class Baseline(Result):
    """Raw agreement beside what always answering people's majority class would score."""

    agreement: float | None
    majority: float | None
    majority_class: str | None
    sentence: str


@dataclass(frozen=True)
class Agreement(Result):
    ordinal: OrdinalStats | None
    ceiling: Ceiling | None
    baseline: Baseline
    alt_test: dict[str, Any] | None
    alt_test_why_not: str | None


def human_scores(campaign: Campaign) -> dict[int, float]:
    """People's final score of each item of an ordinal campaign: adjudicated, else the median of the scores given."""
    scores: dict[int, list[int]] = defaultdict(list)
    for item_id, score in Label.objects.filter(item__campaign=campaign, score__isnull=False).values_list(
        "item_id", "score"
    ):
        scores[item_id].append(score)
    out = {item_id: float(statistics.median_low(values)) for item_id, values in scores.items()}
    out.update(
        Adjudication.objects.filter(item__campaign=campaign, score__isnull=False).values_list("item_id", "score")
    )
    return out


def annotator_numbers(campaign: Campaign) -> dict[tuple[str, Any], str]:
    """Each annotator (``("user", id)`` or ``("external", name)``) named by the order of their first label in the
    campaign, "annotator 1" first: how a published report names people, whose names it leaves out."""
    names: dict[tuple[str, Any], str] = {}
    rows = Label.objects.filter(item__campaign=campaign).order_by("created_at", "pk")
    for user_id, external in rows.values_list("annotator_id", "external_annotator").iterator(chunk_size=5000):
        names.setdefault(("user", user_id) if user_id else ("external", external), f"annotator {len(names) + 1}")
    return names


def _per_annotator(campaign: Campaign, numbers: dict[tuple[str, Any], str] | None = None) -> dict[int, dict[str, Any]]:
    """Each item's counted labels by annotator (by username, or by ``numbers`` where given): the class, or the score
    on an ordinal campaign."""
    out: dict[int, dict[str, Any]] = defaultdict(dict)
    rows = Label.objects.filter(item__campaign=campaign).exclude(value=Label.Value.CANT_TELL)
    for item_id, user_id, user, external, value, score in rows.values_list(
        "item_id", "annotator_id", "annotator__username", "external_annotator", "value", "score"
    ):
        if numbers is not None:
            key = ("user", user_id) if user_id else ("external", external)
            who = numbers.setdefault(key, f"annotator {len(numbers) + 1}")  # one who labelled since: numbered next
        else:
            who = user or f"{external} (external)"
        out[item_id][who] = score if campaign.ordinal else value
    return out


def _ordinal(campaign: Campaign, pairs: Sequence[Pair], judge_scores: dict[int, float]) -> OrdinalStats:
    people = human_scores(campaign)
    both = [
        (people[p.item_id], judge_scores[p.item_id]) for p in pairs if p.item_id in people and p.item_id in judge_scores
    ]
    scale = campaign.scale_points
    lines = {}
    for weights in ("linear", "quadratic"):
        if len(both) < 2:
            lines[weights] = KappaLine(None, None, None, len(both), "fewer than two items with both scores")
            continue
        est = weighted_kappa_interval(
            [int(h) for h, _ in both], [int(j) for _, j in both], weights=weights, labels=scale
        )
        lines[weights] = _kappa_line(est, len(both))
    exact = sum(1 for h, j in both if h == j) / len(both) if both else None
    return OrdinalStats(scale, campaign.fail_at, len(both), lines["linear"], lines["quadratic"], exact)


def _judge_on_shared(
    campaign: Campaign, shared: dict[int, Any], pairs: Sequence[Pair], judge_scores: dict[int, float]
) -> KappaLine | None:
    """The judge against people's final label on the items several labelled, on the labels people gave each other:
    pass / fail, or the scale's points on an ordinal campaign (so it stands beside people's kappa)."""
    on_shared = [p for p in pairs if p.item_id in shared]
    if campaign.ordinal and judge_scores:
        people = human_scores(campaign)
        both = [(people[p.item_id], judge_scores[p.item_id]) for p in on_shared if p.item_id in people]
        both = [(h, j) for h, j in both if j is not None]
        if len(both) < 2:
            return None
        return _kappa_line(kappa_interval([int(h) for h, _ in both], [int(j) for _, j in both]), len(both))
    if len(on_shared) < 2:
        return None
    return _kappa_line(kappa_interval([p.human for p in on_shared], [p.judge for p in on_shared]), len(on_shared))


def _ceiling(
    campaign: Campaign, by_item: dict[int, dict[str, Any]], pairs: Sequence[Pair], judge_scores: dict[int, float]
) -> Ceiling | None:
    shared = {item: labels for item, labels in by_item.items() if len(labels) >= 2}
    if not shared:
        return None
    annotators = sorted({a for labels in shared.values() for a in labels})
    pair_rows = []
    for i, a in enumerate(annotators):
        for b in annotators[i + 1 :]:
            common = [labels for labels in shared.values() if a in labels and b in labels]
            if len(common) < 2:
                continue
            est = kappa_interval([c[a] for c in common], [c[b] for c in common])
            pair_rows.append({"annotators": [a, b], **_kappa_line(est, len(common)).as_dict()})
    defined = [p for p in pair_rows if p["estimate"] is not None]
    people = None
    if defined:
        people = KappaLine(
            statistics.fmean(p["estimate"] for p in defined),
            min(p["low"] for p in defined),
            max(p["high"] for p in defined),
            max(p["n"] for p in defined),
        )
    level = "ordinal" if campaign.ordinal else "nominal"
    alpha_est = krippendorff_alpha_interval([list(labels.values()) for labels in shared.values()], level=level)
    alpha = KappaLine(finite(alpha_est.estimate), finite(alpha_est.low), finite(alpha_est.high), alpha_est.units)
    judge = _judge_on_shared(campaign, shared, pairs, judge_scores)

    def words(line: KappaLine | None, what: str) -> str:
        if line is None or line.estimate is None:
            return f"{what} undefined"
        return f"{what} {line.estimate:.2f} ({line.low:.2f}–{line.high:.2f})"

    sentence = (
        f"on the {len(shared)} items several people labelled: people agree with each other at "
        f"{words(people, 'kappa')}, Krippendorff's {words(alpha, 'alpha')}; the judge agrees with their final label "
        f"at {words(judge, 'kappa')}"
    )
    return Ceiling(len(shared), len(annotators), people, pair_rows, alpha, level, judge, sentence)


def _baseline(campaign: Campaign, pairs: Sequence[Pair]) -> Baseline:
    if not pairs:
        return Baseline(None, None, None, "no labelled items yet")
    agreement = sum(p.human == p.judge for p in pairs) / len(pairs)
    humans = [p.human for p in pairs]
    majority = majority_baseline(humans)
    passes = sum(humans)
    cls = campaign.pass_word if passes * 2 >= len(humans) else campaign.fail_word
    return Baseline(
        agreement,
        majority,
        cls.lower(),
        f"raw agreement {100 * agreement:.0f} % against {100 * majority:.0f} % for always answering "
        f"{cls.lower()} (people's majority class)",
    )


def _alt_test(
    campaign: Campaign, by_item: dict[int, dict[str, Any]], pairs: Sequence[Pair], judge_scores: dict[int, float]
):
    annotators = {a for labels in by_item.values() for a in labels}
    if len(annotators) < ALT_TEST_MIN_ANNOTATORS:
        return None, (
            f"the alternative annotator test needs at least {ALT_TEST_MIN_ANNOTATORS} annotators on the same items; "
            f"this campaign has {len(annotators)}"
        )
    if campaign.ordinal:
        judge = {p.item_id: judge_scores[p.item_id] for p in pairs if p.item_id in judge_scores}
        scoring = "neg_rmse"
    else:
        judge = {p.item_id: "supported" if p.judge else "unsupported" for p in pairs}
        scoring = "accuracy"
    labels = {item: labels for item, labels in by_item.items() if len(labels) >= 2 and item in judge}
    try:
        result = alternative_annotator_test(
            labels=labels, judge=judge, scoring=scoring, min_items_per_annotator=ALT_TEST_MIN_ITEMS
        )
    except ValueError as error:
        return None, f"the alternative annotator test cannot run: {error}"
    return result.as_dict(), None


def agreement(
    campaign: Campaign,
    pairs: Sequence[Pair],
    judge_scores: dict[int, float] | None = None,
    *,
    anonymous: bool = False,
) -> Agreement:
    """Everything beside the judge report's core numbers, on the same labelled pairs; ``anonymous`` names the
    annotators by :func:`annotator_numbers` instead of their usernames."""
    judge_scores = judge_scores or {}
    by_item = _per_annotator(campaign, annotator_numbers(campaign) if anonymous else None)
    alt, why_not = _alt_test(campaign, by_item, pairs, judge_scores)
    return Agreement(
        ordinal=_ordinal(campaign, pairs, judge_scores) if campaign.ordinal else None,
        ceiling=_ceiling(campaign, by_item, pairs, judge_scores),
        baseline=_baseline(campaign, pairs),
        alt_test=alt,
        alt_test_why_not=why_not,
    )
