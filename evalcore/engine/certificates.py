"""Certify a judge on the bounds of its intervals: trusted, untrusted or inconclusive ("label about N more").

A judge is fit to gate when people's labels show, beyond sampling noise, that it misses few of the
items people fail and agrees with people beyond chance. Point estimates cannot show that: a judge
that missed 0 of 16 unsupported claims may still miss up to 19 % of them. So the certificate reads
the interval bounds (each the end of the two-sided interval at ``confidence``, a one-sided bound
at ``(1 + confidence) / 2``):

- ``trusted`` when the miss rate's upper bound is at most ``max_miss_rate`` and kappa's lower
  bound at least ``min_kappa``: the data show the judge clears both bars;
- ``untrusted`` when the miss rate's lower bound is above ``max_miss_rate`` or kappa's upper bound
  below ``min_kappa``: the data show it fails one;
- ``inconclusive`` otherwise, with the failure-class items to label for a decision if the observed
  rates held (the planner's "label about N more").

A judge exactly at a bar reads ``trusted`` with probability about ``(1 - confidence) / 2`` (2.5 % at
0.95; the Wilson bound's discreteness takes it to 2.8 % at worst, measured exactly), whatever the
number of labels; docs/conventions.md says when that is optimistic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ._interval import Interval
from ._validation import check_positive_int, check_probability
from .agreement import KAPPA_UNDEFINED_REASON, KappaEstimate, kappa_interval
from .proportions import ProportionEstimate, proportion_interval, z_score
from .weighted_kappa import KAPPA_WEIGHTS, KappaWeights, weighted_kappa_interval

TRUSTED, UNTRUSTED, INCONCLUSIVE = "trusted", "untrusted", "inconclusive"
#: The states of a judge certificate.
CERTIFICATE_STATES = (TRUSTED, UNTRUSTED, INCONCLUSIVE)
CertificateState = Literal["trusted", "untrusted", "inconclusive"]
ONE_CLASS_REASON = (
    "kappa cannot show agreement: people put every labelled item in the same class, so kappa is 0 or undefined "
    "whatever the judge does; label items of the other class too"
)
#: The most failure-class items "label about N more" will ever ask for.
MAX_MORE_LABELS = 10**6


def _pct(value: float) -> str:
    return f"{100 * value:.0f} %"


@dataclass(frozen=True)
class CertificateBars:
    """The bars a judge must clear to be trusted, and the confidence of the bounds that must clear them.

    Parameters
    ----------
    max_miss_rate : float, default 0.15
        The highest share of the failure class (items people fail) the judge may pass.
    min_kappa : float, default 0.6
        The lowest kappa (weighted kappa on an ordinal scale) between the judge and people.
    confidence : float, default 0.95
        Level of the two-sided intervals whose ends are compared with the bars; each end is a
        one-sided bound at ``(1 + confidence) / 2``.

    Examples
    --------
    >>> CertificateBars()
    CertificateBars(max_miss_rate=0.15, min_kappa=0.6, confidence=0.95)
    """

    max_miss_rate: float = 0.15
    min_kappa: float = 0.6
    confidence: float = 0.95

    def __post_init__(self) -> None:
        check_probability(self.max_miss_rate, "max_miss_rate")
        check_probability(self.confidence, "confidence")
        if isinstance(self.min_kappa, bool) or not isinstance(self.min_kappa, (int, float)):
            raise ValueError(f"min_kappa must be a number between -1 and 1, got {self.min_kappa!r}")
        if not -1.0 < self.min_kappa < 1.0:
            raise ValueError(f"min_kappa must be strictly between -1 and 1, got {self.min_kappa}")


def _json_number(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


@dataclass(frozen=True)
class JudgeCertificate:
    """Whether people's labels show a judge clears the bars: the state, the bounds behind it, and why, in words.

    Parameters
    ----------
    state : {"trusted", "untrusted", "inconclusive"}
        The verdict (see the module's description).
    kappa : KappaEstimate
        Kappa between people and the judge with its interval: weighted kappa on the scores when
        scores were given, else Cohen's kappa on the failure flags.
    miss_rate : ProportionEstimate
        The failure-class items the judge passed, out of the items people failed (Wilson
        interval). With no failure-class item, ``estimate`` is NaN, ``n`` 0 and the interval [0, 1].
    items : int
        Items both people and the judge labelled.
    failure_items : int
        Of those, the items people failed (the miss rate's denominator).
    more_failure_labels : int or None
        When inconclusive: about how many more failure-class items to label for a decision, if
        the observed rates held; None otherwise, or when no number of labels would decide (a
        rate sitting on its bar, an undefined kappa).
    reasons : tuple of str
        The state in words, one sentence per bar, and what to do.
    bars : CertificateBars, default CertificateBars()
        The bars it was measured against.
    weights : {"linear", "quadratic"} or None, default None
        The weighting of kappa (None: unweighted kappa on the failure flags).
    more_items : int or None, default None
        ``more_failure_labels`` in items of any class at the sample's share of failure-class items.
    missed : int, default 0
        The failure-class items in the sample the judge passed.

    Examples
    --------
    >>> cert = certify_judge(human_failure=[True] * 16 + [False] * 184,
    ...                      judge_failure=[True] * 16 + [True] * 4 + [False] * 180)
    >>> cert.state, cert.more_failure_labels
    ('inconclusive', 6)
    """

    state: CertificateState
    kappa: KappaEstimate
    miss_rate: ProportionEstimate
    items: int
    failure_items: int
    more_failure_labels: int | None
    reasons: tuple[str, ...]
    bars: CertificateBars = field(default_factory=CertificateBars)
    weights: str | None = None
    more_items: int | None = None
    missed: int = 0

    def sentence(self) -> str:
        """Return the state and its reasons in one line: "inconclusive: misses up to 19 % of ..."."""
        return f"{self.state}: " + "; ".join(self.reasons)

    def as_dict(self) -> dict[str, Any]:
        """Return the certificate as JSON-safe data (NaN becomes None).

        Returns
        -------
        dict
            ``state``, ``kappa`` and ``miss_rate`` (estimate, low, high and their details),
            ``items``, ``failure_items``, ``missed``, ``more_failure_labels``, ``more_items``,
            ``reasons`` (a list) and ``bars``.

        Examples
        --------
        >>> import json
        >>> cert = certify_judge(human_failure=[True, False], judge_failure=[True, False])
        >>> json.loads(json.dumps(cert.as_dict(), allow_nan=False))["state"]
        'inconclusive'
        """
        k, m = self.kappa, self.miss_rate
        return {
            "state": self.state,
            "kappa": {
                "estimate": _json_number(k.estimate),
                "low": _json_number(k.low),
                "high": _json_number(k.high),
                "se": _json_number(k.se),
                "confidence": k.confidence,
                "weights": self.weights,
                "undefined_reason": k.undefined_reason,
            },
            "miss_rate": {
                "estimate": _json_number(m.estimate),
                "low": _json_number(m.low),
                "high": _json_number(m.high),
                "n": m.n,
                "missed": self.missed,
                "confidence": m.confidence,
                "method": m.method,
            },
            "items": self.items,
            "failure_items": self.failure_items,
            "missed": self.missed,
            "more_failure_labels": self.more_failure_labels,
            "more_items": self.more_items,
            "reasons": list(self.reasons),
            "bars": {
                "max_miss_rate": self.bars.max_miss_rate,
                "min_kappa": self.bars.min_kappa,
                "confidence": self.bars.confidence,
            },
        }


def _no_failures(confidence: float) -> ProportionEstimate:
    """The miss rate without a failure-class item: unknown, anything from 0 to 1."""
    return ProportionEstimate(
        estimate=math.nan, low=0.0, high=1.0, n=0, se=math.nan, confidence=confidence, method="wilson"
    )


def _flags(values: Sequence, name: str) -> np.ndarray:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of booleans (True: the item is in the failure class), not a string")
    arr = np.asarray(list(values) if not isinstance(values, np.ndarray) else values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a one-dimensional sequence of booleans")
    if arr.dtype != bool:
        bad = [x for x in arr.tolist() if x not in (0, 1)]
        if bad:
            raise ValueError(f"{name} must hold booleans (True: the item is in the failure class), got {bad[0]!r}")
    return arr.astype(bool)


def certificate_state(
    *, miss_low: float, miss_high: float, kappa_low: float, kappa_high: float, bars: CertificateBars
) -> CertificateState:
    """Return the certificate's state from the bounds of the miss rate and of kappa.

    Parameters
    ----------
    miss_low, miss_high : float
        The bounds of the miss rate's interval.
    kappa_low, kappa_high : float
        The bounds of kappa's interval (NaN when kappa is undefined: never trusted then).
    bars : CertificateBars
        The bars.

    Returns
    -------
    {"trusted", "untrusted", "inconclusive"}

    Examples
    --------
    >>> certificate_state(miss_low=0.0, miss_high=0.19, kappa_low=0.7, kappa_high=0.95, bars=CertificateBars())
    'inconclusive'
    """
    if miss_low > bars.max_miss_rate or kappa_high < bars.min_kappa:
        return UNTRUSTED
    if miss_high <= bars.max_miss_rate and kappa_low >= bars.min_kappa:
        return TRUSTED
    return INCONCLUSIVE


def _more_failure_labels(
    miss: ProportionEstimate, kappa: KappaEstimate, bars: CertificateBars, *, wilson: bool
) -> int | None:
    """The fewest extra failure-class items that decide, if the observed rates held (None: none does).

    The miss rate's bounds are its Wilson interval at the observed rate over more items (``wilson``),
    or its bounds' distances to the estimate shrunk by ``sqrt(failures / (failures + extra))`` (an
    interval from a weighted design); kappa's bounds shrink that way too (its standard error falls as
    ``1 / sqrt(items)``, the items growing with the failure-class items at the sample's share).
    """
    failures = miss.n
    if failures == 0:  # no failure seen yet: what a judge that misses none would need, at least
        return next(
            n
            for n in range(1, MAX_MORE_LABELS)
            if proportion_interval(0, n, confidence=bars.confidence).high <= bars.max_miss_rate
        )
    if math.isnan(kappa.estimate):
        return None

    def decided(extra: int) -> bool:
        shrink = math.sqrt(failures / (failures + extra))
        if wilson:
            bound = proportion_interval(float(miss.estimate), failures + extra, confidence=bars.confidence)
            miss_low, miss_high = bound.low, bound.high
        else:
            miss_low = miss.estimate - (miss.estimate - miss.low) * shrink
            miss_high = miss.estimate + (miss.high - miss.estimate) * shrink
        state = certificate_state(
            miss_low=miss_low,
            miss_high=miss_high,
            kappa_low=kappa.estimate - (kappa.estimate - kappa.low) * shrink,
            kappa_high=kappa.estimate + (kappa.high - kappa.estimate) * shrink,
            bars=bars,
        )
        return state != INCONCLUSIVE

    if not decided(MAX_MORE_LABELS):
        return None
    high = 1
    while not decided(high):  # once decided, more labels at the same rates stay decided
        high *= 2
    low = high // 2 + 1  # decided(high // 2) is False (or high is 1: low is 1)
    while low < high:
        middle = (low + high) // 2
        if decided(middle):
            high = middle
        else:
            low = middle + 1
    return high


def _miss_reason(miss: ProportionEstimate, bars: CertificateBars, failure_label: str) -> str:
    level = _pct(bars.confidence)
    bar = _pct(bars.max_miss_rate)
    if miss.n == 0:
        return f"no {failure_label} among the labelled items: the miss rate is unknown against a {bar} bar"
    if miss.high <= bars.max_miss_rate:
        return f"misses at most {_pct(miss.high)} of {failure_label} (upper end of its {level} interval), within the {bar} bar"
    if miss.low > bars.max_miss_rate:
        return f"misses at least {_pct(miss.low)} of {failure_label} (lower end of its {level} interval), over the {bar} bar"
    return f"misses up to {_pct(miss.high)} of {failure_label} (upper end of its {level} interval) against a {bar} bar"


def _kappa_reason(kappa: KappaEstimate, bars: CertificateBars, weights: str | None) -> str:
    name = f"weighted kappa ({weights})" if weights else "kappa"
    if kappa.undefined_reason:
        return (
            f"weighted {kappa.undefined_reason}"
            if weights and kappa.undefined_reason.startswith("kappa")
            else kappa.undefined_reason
        )
    level = _pct(bars.confidence)
    head = f"{name} {kappa.estimate:.2f}"
    if kappa.low >= bars.min_kappa:
        return (
            f"{head}, at least {kappa.low:.2f} (lower end of its {level} interval), clears the {bars.min_kappa:g} bar"
        )
    if kappa.high < bars.min_kappa:
        return f"{head}, at most {kappa.high:.2f} (upper end of its {level} interval), under the {bars.min_kappa:g} bar"
    return f"{head}, as low as {kappa.low:.2f} (lower end of its {level} interval) against a {bars.min_kappa:g} bar"


def _kappa(
    human: np.ndarray,
    judge: np.ndarray,
    human_scores: Sequence | None,
    judge_scores: Sequence | None,
    scale: Sequence | None,
    weights: str | None,
    confidence: float,
) -> KappaEstimate:
    """Weighted kappa on the scores when given, else Cohen's kappa on the failure flags."""
    if (human_scores is None) != (judge_scores is None):
        raise ValueError("give both human_scores and judge_scores, or neither")
    if human_scores is not None:
        if weights not in KAPPA_WEIGHTS:
            raise ValueError(f"weights must be 'linear' or 'quadratic' with scores, got {weights!r}")
        if scale is None:
            raise ValueError("scale (the ordinal labels in order, say [1, 2, 3, 4, 5]) is required with scores")
        if len(human_scores) != len(human) or len(judge_scores) != len(human):
            raise ValueError(
                f"the scores must cover the failure flags' {len(human)} items: got {len(human_scores)} human and "
                f"{len(judge_scores)} judge scores"
            )
        return weighted_kappa_interval(human_scores, judge_scores, weights=weights, labels=scale, confidence=confidence)
    if weights is not None or scale is not None:
        raise ValueError("weights and scale apply to scores: give human_scores and judge_scores with them")
    return kappa_interval(human.tolist(), judge.tolist(), confidence=confidence)


def certify_judge(
    *,
    human_failure: Sequence,
    judge_failure: Sequence,
    human_scores: Sequence | None = None,
    judge_scores: Sequence | None = None,
    scale: Sequence | None = None,
    weights: KappaWeights | None = None,
    bars: CertificateBars = CertificateBars(),
    failure_label: str = "failure-class items",
) -> JudgeCertificate:
    """Certify a judge against people's labels on the same items: trusted, untrusted or inconclusive.

    Parameters
    ----------
    human_failure, judge_failure : sequences of bool, same length
        Per item, whether people (their final label) and the judge put it in the failure class
        (unsupported, irrelevant, a score at or below the threshold: the caller decides).
    human_scores, judge_scores : sequences of labels, optional
        The same items' ordinal labels (1-5) by people and by the judge: kappa is then weighted
        kappa on them. Give both, with ``scale`` and ``weights``, or neither (kappa is then
        Cohen's kappa on the failure flags).
    scale : sequence, optional
        The ordinal scale in order (``[1, 2, 3, 4, 5]``); every label counts even if unused.
    weights : {"linear", "quadratic"}, optional
        The weighting of weighted kappa; required with scores.
    bars : CertificateBars, default CertificateBars()
        The bars (15 % miss rate, kappa 0.6) and the confidence of the bounds.
    failure_label : str, default "failure-class items"
        What the failure class is called in the reasons ("unsupported claims").

    Returns
    -------
    JudgeCertificate
        The state, kappa and the miss rate with their intervals, the item counts, the reasons in
        words and, when inconclusive, about how many more failure-class items would decide.

    Notes
    -----
    The miss rate is the failure-class items the judge passed over the items people failed, with
    the engine's Wilson interval; kappa's interval is the Wald interval of its large-sample
    standard error (Fleiss, Cohen and Everitt, 1969). "Label about N more" is the fewest extra
    failure-class items (the other items growing with them at the sample's share) whose bounds,
    at the observed miss rate and kappa, would decide; labelling them decides about half the time
    when the observed rates are the truth.

    Examples
    --------
    The demo's tuned judge: 0 of 16 unsupported claims missed is not yet proof of a miss rate
    under 15 %:

    >>> people = [True] * 16 + [False] * 184
    >>> judge = [True] * 16 + [True] * 4 + [False] * 180
    >>> cert = certify_judge(human_failure=people, judge_failure=judge, failure_label="unsupported claims")
    >>> cert.state, cert.more_failure_labels, round(cert.miss_rate.high, 3)
    ('inconclusive', 6, 0.194)
    >>> cert.reasons[0]
    'misses up to 19 % of unsupported claims (upper end of its 95 % interval) against a 15 % bar'
    """
    if not isinstance(bars, CertificateBars):
        raise TypeError("bars must be a CertificateBars")
    human = _flags(human_failure, "human_failure")
    judge = _flags(judge_failure, "judge_failure")
    if len(human) != len(judge):
        raise ValueError(
            f"human_failure and judge_failure must cover the same items in the same order: got {len(human)} and "
            f"{len(judge)}"
        )
    if len(human) == 0:
        raise ValueError("human_failure and judge_failure are empty: there is nothing to certify")
    kappa = _kappa(human, judge, human_scores, judge_scores, scale, weights, bars.confidence)
    failures = int(human.sum())
    missed = int((human & ~judge).sum())
    if failures:
        miss = proportion_interval(missed, failures, confidence=bars.confidence)
    else:
        miss = _no_failures(bars.confidence)
    return _certificate(
        kappa=kappa,
        miss=miss,
        items=len(human),
        missed=missed,
        bars=bars,
        weights=weights if human_scores is not None else None,
        failure_label=failure_label,
        wilson=True,
    )


def _certificate(
    *,
    kappa: KappaEstimate,
    miss: ProportionEstimate,
    items: int,
    missed: int,
    bars: CertificateBars,
    weights: str | None,
    failure_label: str,
    wilson: bool,
) -> JudgeCertificate:
    """The state, the reasons and "label about N more" from the two intervals."""
    failures = miss.n
    if failures in (0, items) and weights is None:
        # people put every item in one class: kappa is 0 or undefined whatever the judge does, so it decides nothing
        # (weighted kappa on scores still measures agreement within the class)
        kappa = KappaEstimate(
            math.nan, math.nan, math.nan, se=math.nan, confidence=bars.confidence, undefined_reason=ONE_CLASS_REASON
        )
    state = certificate_state(
        miss_low=miss.low, miss_high=miss.high, kappa_low=kappa.low, kappa_high=kappa.high, bars=bars
    )
    reasons = [_miss_reason(miss, bars, failure_label), _kappa_reason(kappa, bars, weights)]
    more = more_items = None
    if state == INCONCLUSIVE:
        more = _more_failure_labels(miss, kappa, bars, wilson=wilson)
        if more is not None:
            more_items = math.ceil(more * items / failures) if failures else None
            extra = f" (about {more_items} more items at the sample's share)" if more_items else ""
            at_least = "at least " if not failures else "about "
            reasons.append(f"label {at_least}{more} more {failure_label}{extra} to decide")
        elif kappa.undefined_reason:
            reasons.append("more labels of the same kind will not decide: label items of the other class too")
        else:
            reasons.append("the observed rates sit on a bar: more labels alone will not decide")
    return JudgeCertificate(
        state=state,
        kappa=kappa,
        miss_rate=miss,
        items=items,
        failure_items=failures,
        more_failure_labels=more,
        reasons=tuple(reasons),
        bars=bars,
        weights=weights,
        more_items=more_items,
        missed=missed,
    )


def certify_intervals(
    *,
    kappa: Interval,
    miss_rate: Interval,
    items: int,
    failure_items: int,
    missed: int,
    bars: CertificateBars = CertificateBars(),
    weights: KappaWeights | None = None,
    failure_label: str = "failure-class items",
) -> JudgeCertificate:
    """Certify a judge from intervals computed elsewhere, such as a stratified sample's weighted estimates.

    A campaign that over-samples the judge's rarer verdict must weight its labels back to the run
    (:func:`~evalcore.engine.stratified_agreement`); its kappa and miss-rate intervals are then
    read against the bars exactly as :func:`certify_judge` reads its own.

    Parameters
    ----------
    kappa : Interval
        Kappa (or weighted kappa) with its interval at ``bars.confidence``.
    miss_rate : Interval
        The miss rate with its interval at ``bars.confidence``.
    items : int
        Items labelled.
    failure_items : int
        Of those, the items people failed.
    missed : int
        Of those, the items the judge passed.
    bars : CertificateBars, default CertificateBars()
        The bars and the confidence the intervals were computed at.
    weights : {"linear", "quadratic"} or None, default None
        The weighting of ``kappa``, for the reasons (None: unweighted).
    failure_label : str, default "failure-class items"
        What the failure class is called in the reasons.

    Returns
    -------
    JudgeCertificate
        As :func:`certify_judge`; "label about N more" shrinks both intervals' distances to their
        estimates as ``sqrt(failure_items / (failure_items + N))``, an approximation that asks for
        more labels than the Wilson interval would when the miss rate is near 0.

    Examples
    --------
    >>> from evalcore.engine import Interval
    >>> cert = certify_intervals(kappa=Interval(0.85, 0.74, 0.93), miss_rate=Interval(0.04, 0.01, 0.12),
    ...                          items=240, failure_items=60, missed=2)
    >>> cert.state
    'trusted'
    """
    if not isinstance(bars, CertificateBars):
        raise TypeError("bars must be a CertificateBars")
    items = check_positive_int(items, "items")
    failure_items = check_positive_int(failure_items, "failure_items", allow_zero=True)
    missed = check_positive_int(missed, "missed", allow_zero=True)
    if failure_items > items or missed > failure_items:
        raise ValueError(
            f"need missed <= failure_items <= items, got missed={missed}, failure_items={failure_items}, items={items}"
        )
    for interval, name in ((kappa, "kappa"), (miss_rate, "miss_rate")):
        if not isinstance(interval, Interval):
            raise TypeError(f"{name} must be an Interval (estimate, low, high)")
        if not (interval.low <= interval.estimate <= interval.high) and not math.isnan(interval.estimate):
            raise ValueError(f"{name}'s interval must hold its estimate, got {tuple(interval)}")
    z = z_score(bars.confidence)
    kappa_estimate = KappaEstimate(
        kappa.estimate,
        kappa.low,
        kappa.high,
        se=(kappa.high - kappa.low) / (2 * z),
        confidence=bars.confidence,
        undefined_reason=getattr(kappa, "undefined_reason", None)
        or (KAPPA_UNDEFINED_REASON if math.isnan(kappa.estimate) else None),
    )
    if failure_items:
        miss = ProportionEstimate(
            estimate=miss_rate.estimate,
            low=miss_rate.low,
            high=miss_rate.high,
            n=failure_items,
            se=getattr(miss_rate, "se", math.nan),
            confidence=bars.confidence,
            method=getattr(miss_rate, "method", "given"),
        )
    else:
        miss = _no_failures(bars.confidence)
    return _certificate(
        kappa=kappa_estimate,
        miss=miss,
        items=items,
        missed=missed,
        bars=bars,
        weights=weights,
        failure_label=failure_label,
        wilson=False,
    )
