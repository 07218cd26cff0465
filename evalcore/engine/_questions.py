"""How many paired questions settle a comparison: the gate's power for a true change, from assumptions or a pilot.

Public through :mod:`evalcore.engine.planning` (see there for the formulas).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from ._validation import check_positive_int, check_probability
from .proportions import _paired_sd, paired_sample_size, z_score
from .release_gate import BLOCK, PASS


def _pct(value: float, digits: int = 0) -> str:
    """A share in points, as the product writes it ("30 %")."""
    return f"{100 * value:.{digits}f} %"


@dataclass(frozen=True, kw_only=True)
class QuestionsPlan:
    """The paired questions that would settle a comparison, and the assumptions behind the number.

    Parameters
    ----------
    questions : int or None
        Paired questions needed (None: no number settles it, a true change of exactly minus the
        margin when the margin is 0).
    outcome : {"pass", "block"}
        What the gate would decide with that many questions, if the change is ``change``.
    change : float
        The true change assumed (candidate minus baseline, in the better direction).
    margin : float
        The gate's margin.
    sd : float
        Standard deviation of the per-question differences.
    discordance : float or None
        For pass/fail metrics: the share of questions whose outcome flips.
    power, confidence : float
        The chance of settling it, and the interval's level.
    available : int or None
        Paired questions there are (the eval set, or the slice).
    family_size : int, default 1
        Decisions the gate corrects "block" over: a block is planned at ``α / family_size`` (the
        strictest step of Holm's procedure, so the plan errs towards more questions).

    Examples
    --------
    >>> plan = questions_needed(0.0, margin=0.02, discordance=0.10)
    >>> plan.questions, plan.outcome
    (1963, 'pass')
    """

    questions: int | None
    outcome: str
    change: float
    margin: float
    sd: float
    discordance: float | None
    power: float
    confidence: float
    available: int | None = None
    family_size: int = 1

    def sentence(self, *, observed: bool = False, scope: str = "the eval set") -> str:
        """The plan in words, as a review decision carries it ("... would settle this; the eval set has 600")."""
        spread = (
            f"{_pct(self.discordance)} of questions flipping"
            if self.discordance is not None
            else f"a per-question sd of {self.sd:.3f}"
        )
        if observed:
            basis = f"at the observed spread ({spread} and a change of {self.change:+.3f})"
        else:
            basis = f"with {spread} and a true change of {self.change:+.3f}"
        have = f"; {scope} has {self.available:,}" if self.available is not None else ""
        corrected = (
            f", corrected for {self.family_size} decisions" if self.outcome == BLOCK and self.family_size > 1 else ""
        )
        if self.questions is None:
            return (
                f"{basis}, no number of paired questions would settle this: the change sits on minus the margin{have}"
            )
        return (
            f"{basis}, about {self.questions:,} paired questions would settle this ({self.outcome}, with "
            f"{_pct(self.power)} power{corrected}){have}"
        )


def questions_needed(
    change: float,
    *,
    margin: float,
    sd: float | None = None,
    discordance: float | None = None,
    confidence: float = 0.95,
    power: float = 0.8,
    available: int | None = None,
    family_size: int = 1,
) -> QuestionsPlan:
    """Return how many paired questions tell a true change of ``change`` from the margin with ``power``.

    Parameters
    ----------
    change : float
        The true change (candidate minus baseline; positive is better).
    margin : float
        The largest drop the gate tolerates (0.02).
    sd : float, optional
        Standard deviation of the per-question differences.
    discordance : float, optional
        For pass/fail metrics instead of ``sd``: the share of questions whose outcome flips
        between the runs (then ``sd**2 = discordance - change**2``).
    confidence : float, default 0.95
        The gate's interval level.
    power : float, default 0.8
        The chance that the gate settles (passes or blocks) with that many questions.
    available : int, optional
        Paired questions there are, for the words.
    family_size : int, default 1
        Decisions the gate corrects "block" over (see :class:`QuestionsPlan`); a pass needs no correction.

    Returns
    -------
    QuestionsPlan

    Examples
    --------
    A drop of 3 points with a 2-point margin can only block:

    >>> plan = questions_needed(-0.03, margin=0.02, sd=0.3)
    >>> plan.questions, plan.outcome
    (785, 'block')
    """
    if isinstance(change, bool) or not isinstance(change, numbers.Real) or not math.isfinite(change):
        raise ValueError(f"change must be a finite number, got {change!r}")
    if isinstance(margin, bool) or not isinstance(margin, numbers.Real) or not math.isfinite(margin) or margin < 0:
        raise ValueError(f"margin must be a number of 0 or more (a tolerated drop), got {margin!r}")
    change, margin = float(change), float(margin)
    confidence = check_probability(confidence, "confidence")
    power = check_probability(power, "power")
    sd = _paired_sd(change, sd=sd, discordant=discordance, name="discordance")
    if discordance is not None:
        discordance = float(discordance)
    if available is not None:
        available = check_positive_int(available, "available", allow_zero=True)
    family_size = check_positive_int(family_size, "family_size")
    outcome, distance = (PASS, change + margin) if change > -margin else (BLOCK, -change)
    level = confidence if outcome == PASS else 1.0 - (1.0 - confidence) / family_size
    questions = paired_sample_size(distance, sd=sd, confidence=level, power=power) if distance > 0 else None
    return QuestionsPlan(
        questions=questions,
        outcome=outcome,
        change=change,
        margin=margin,
        sd=sd,
        discordance=discordance,
        power=power,
        confidence=confidence,
        available=available,
        family_size=family_size,
    )


def settle_review(
    base: Sequence[float] | np.ndarray,
    cand: Sequence[float] | np.ndarray,
    *,
    margin: float,
    higher_is_better: bool = True,
    confidence: float = 0.95,
    power: float = 0.8,
    available: int | None = None,
    family_size: int = 1,
) -> QuestionsPlan:
    """Return the paired questions that would settle a comparison, at the change and spread observed.

    The observed mean difference is taken as the true change and the observed spread (the
    discordance when every score is 0 or 1, else the standard deviation of the differences) as
    the truth's: the number is what it would take if the pilot's numbers held.

    Parameters
    ----------
    base, cand : sequences of float
        Paired per-question scores (same questions, same order, no NaN; at least two).
    margin : float
        The gate's margin.
    higher_is_better : bool, default True
        The metric's direction (a change is counted in the better direction).
    confidence, power : float, default 0.95 and 0.8
        As in :func:`questions_needed`.
    available : int, optional
        Paired questions in the eval set (or the slice).
    family_size : int, default 1
        As in :func:`questions_needed`.

    Returns
    -------
    QuestionsPlan

    Examples
    --------
    >>> base = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1] * 30
    >>> cand = [1, 1, 0, 1, 0, 1, 1, 1, 0, 1] * 30
    >>> plan = settle_review(base, cand, margin=0.02, available=300)
    >>> plan.questions, plan.discordance
    (3925, 0.2)
    """
    b = np.asarray(base, dtype=np.float64)
    c = np.asarray(cand, dtype=np.float64)
    if b.shape != c.shape or b.ndim != 1 or b.size < 2:
        raise ValueError(
            f"base and cand must be paired 1-d scores of the same length, at least 2 (got {b.shape}, {c.shape})"
        )
    if not (np.all(np.isfinite(b)) and np.all(np.isfinite(c))):
        raise ValueError("base and cand must hold no NaN: pair only the questions scored in both runs")
    diffs = c - b if higher_is_better else b - c
    change = float(diffs.mean())
    binary = bool(np.all(np.isin(b, (0.0, 1.0))) and np.all(np.isin(c, (0.0, 1.0))))
    if binary:
        flips = float(np.mean(diffs != 0))
        if flips <= change**2 or flips == 0:
            flips = min(1.0, change**2 + 1.0 / b.size)  # every question moved the same way: the least spread possible
        return questions_needed(
            change,
            margin=margin,
            discordance=flips,
            confidence=confidence,
            power=power,
            available=available,
            family_size=family_size,
        )
    sd = float(diffs.std(ddof=1))
    if not sd > 0:
        sd = 1.0 / b.size  # every difference equal: the least spread there can be with n questions
    return questions_needed(
        change, margin=margin, sd=sd, confidence=confidence, power=power, available=available, family_size=family_size
    )


def power_of(questions: int, *, change: float, margin: float, sd: float, confidence: float = 0.95) -> float:
    """Return the chance that ``questions`` paired questions settle a comparison (the normal approximation).

    Parameters
    ----------
    questions : int
        Paired questions.
    change, margin, sd, confidence
        As in :func:`questions_needed`.

    Returns
    -------
    float
        The probability of a pass when ``change > -margin``, else of a block.

    Examples
    --------
    >>> round(power_of(1963, change=0.0, margin=0.02, sd=math.sqrt(0.1)), 2)
    0.8
    """
    questions = check_positive_int(questions, "questions")
    se = sd / math.sqrt(questions)
    distance = change + margin if change > -margin else -change
    return NormalDist().cdf(distance / se - z_score(confidence))
