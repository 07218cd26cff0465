"""The alternative annotator test: can the judge stand in for the annotators?

Calderon, Reichart and Dror (ACL 2025). Leave one annotator out at a time; on each item that
annotator labelled, score how well the judge and the left-out annotator each match the *other*
annotators (accuracy, or minus the RMSE on a numeric scale). ``rho_judge`` is the share of those
items where the judge does at least as well as the annotator, ``rho_human`` the share where the
annotator does at least as well as the judge. A one-sided paired t-test of
``H0: rho_judge <= rho_human - epsilon`` runs per annotator, with ``epsilon`` the cost-benefit
allowance for the judge (cheaper, faster, always available: 0.1 for crowd workers, 0.15 for
skilled annotators, 0.2 for experts in the authors' advice). The annotators whose null is
rejected after a Benjamini-Yekutieli correction at ``alpha`` are "beaten"; the winning rate
``omega`` is their share, and the judge passes when ``omega >= 0.5``.

This reproduces the procedure of the authors' published code (github.com/nitaytech/AltTest,
``alt_test``): the same indicators, ``scipy.stats.ttest_1samp(..., alternative="less")`` on their
differences, the same BY step-up rule. One difference: when the differences are all equal the
t statistic is undefined (the authors' code then gets a NaN p-value, never rejected); here the
p-value is 0 when that constant is below ``epsilon`` and 1 otherwise, the limit of the test.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy.special import stdtr

from ._validation import check_positive_int, check_probability
from .multiplicity import benjamini_yekutieli

Scoring = Literal["accuracy", "neg_rmse"]
#: The alignment scores of the alternative annotator test.
ALT_TEST_SCORINGS = ("accuracy", "neg_rmse")


@dataclass(frozen=True)
class AnnotatorComparison:
    """The judge against one left-out annotator.

    Parameters
    ----------
    annotator : hashable
        The left-out annotator.
    items : int
        Items that annotator labelled with at least one other annotator and the judge.
    rho_judge : float
        Share of those items where the judge matches the other annotators at least as well.
    rho_human : float
        Share where the left-out annotator matches them at least as well as the judge.
    p_value : float
        One-sided paired t-test of ``H0: rho_judge <= rho_human - epsilon``.
    adjusted_p_value : float
        The Benjamini-Yekutieli adjusted p-value over the tested annotators.
    beaten : bool
        Whether the null is rejected at ``alpha`` after the correction: the judge stands in for
        this annotator.

    Examples
    --------
    >>> c = AnnotatorComparison("ann", 40, 0.9, 0.6, 0.001, 0.004, True)
    >>> c.beaten, c.rho_judge - c.rho_human
    (True, 0.30000000000000004)
    """

    annotator: Hashable
    items: int
    rho_judge: float
    rho_human: float
    p_value: float
    adjusted_p_value: float
    beaten: bool


@dataclass(frozen=True)
class AltTestResult:
    """The alternative annotator test's verdict: the annotators beaten, the winning rate and the words.

    Parameters
    ----------
    comparisons : tuple of AnnotatorComparison
        One per tested annotator, in the annotators' sorted order.
    winning_rate : float
        ``omega``: the share of tested annotators the judge beats.
    advantage_probability : float
        The mean of ``rho_judge`` over the tested annotators (the authors' rho, to compare judges).
    passed : bool
        ``omega >= 0.5``: the judge can stand in for the annotators.
    epsilon, alpha : float
        The cost-benefit allowance and the false discovery rate used.
    scoring : {"accuracy", "neg_rmse"}
        The alignment score.
    skipped : tuple of (annotator, str)
        Annotators left out of the test, and why (too few items).

    Examples
    --------
    >>> result = AltTestResult((), 0.75, 0.8, True, 0.1, 0.05, "accuracy")
    >>> result.passed, result.skipped
    (True, ())
    """

    comparisons: tuple[AnnotatorComparison, ...]
    winning_rate: float
    advantage_probability: float
    passed: bool
    epsilon: float
    alpha: float
    scoring: str
    skipped: tuple[tuple[Hashable, str], ...] = ()

    @property
    def beaten(self) -> int:
        """The annotators the judge beats."""
        return sum(c.beaten for c in self.comparisons)

    def sentence(self) -> str:
        """Return the verdict in words: "the judge can stand in for annotators: 3 of 4 beaten, ω 0.75, ε 0.1"."""
        verdict = "can" if self.passed else "cannot"
        return (
            f"the judge {verdict} stand in for annotators: {self.beaten} of {len(self.comparisons)} beaten, "
            f"ω {self.winning_rate:.2f}, ε {self.epsilon:g}"
        )

    def as_dict(self) -> dict[str, Any]:
        """Return the result as JSON-safe data (annotators as strings, NaN as None).

        Returns
        -------
        dict
            ``passed``, ``winning_rate``, ``advantage_probability``, ``epsilon``, ``alpha``,
            ``scoring``, ``sentence``, ``annotators`` (one dict per comparison) and ``skipped``.

        Examples
        --------
        >>> AltTestResult((), 0.75, 0.8, True, 0.1, 0.05, "accuracy").as_dict()["sentence"]
        'the judge can stand in for annotators: 0 of 0 beaten, ω 0.75, ε 0.1'
        """

        def number(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        return {
            "passed": self.passed,
            "winning_rate": self.winning_rate,
            "advantage_probability": number(self.advantage_probability),
            "epsilon": self.epsilon,
            "alpha": self.alpha,
            "scoring": self.scoring,
            "sentence": self.sentence(),
            "annotators": [
                {
                    "annotator": str(c.annotator),
                    "items": c.items,
                    "rho_judge": c.rho_judge,
                    "rho_human": c.rho_human,
                    "p_value": number(c.p_value),
                    "adjusted_p_value": number(c.adjusted_p_value),
                    "beaten": c.beaten,
                }
                for c in self.comparisons
            ],
            "skipped": [{"annotator": str(a), "reason": why} for a, why in self.skipped],
        }


def _alignment(scoring: str, label: Any, others: list[Any]) -> float:
    if scoring == "accuracy":
        return sum(label == o for o in others) / len(others)
    return -math.sqrt(sum((label - o) ** 2 for o in others) / len(others))


def _one_sided_p(differences: np.ndarray, epsilon: float) -> float:
    """p-value of ``H1: mean(differences) < epsilon`` (one-sample t-test), defined when the differences are constant."""
    if np.ptp(differences) == 0:
        return 0.0 if differences[0] < epsilon else 1.0
    # scipy.stats.ttest_1samp(differences, epsilon, alternative="less"), written out on scipy.special (the tests
    # hold it to ttest_1samp): importing scipy.stats costs every process of the app about a second at start
    n = differences.size
    t = (float(np.mean(differences)) - epsilon) / math.sqrt(float(np.var(differences, ddof=1)) / n)
    return float(stdtr(n - 1, t))


def _check_labels(labels: Mapping, judge: Mapping, scoring: str) -> None:
    if not isinstance(labels, Mapping) or not isinstance(judge, Mapping):
        raise TypeError("labels must map item -> (annotator -> label) and judge item -> label")
    for item, by_annotator in labels.items():
        if not isinstance(by_annotator, Mapping):
            raise TypeError(f"labels[{item!r}] must map annotator -> label, got {type(by_annotator).__name__}")
        if scoring == "neg_rmse":
            for annotator, value in by_annotator.items():
                if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                    raise ValueError(
                        f"neg_rmse needs numeric labels: item {item!r}, annotator {annotator!r} has {value!r}"
                    )
    if scoring == "neg_rmse":
        for item, value in judge.items():
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise ValueError(f"neg_rmse needs numeric labels: the judge's label of item {item!r} is {value!r}")


def alternative_annotator_test(
    *,
    labels: Mapping[Hashable, Mapping[Hashable, Any]],
    judge: Mapping[Hashable, Any],
    epsilon: float = 0.1,
    alpha: float = 0.05,
    scoring: Scoring = "accuracy",
    min_items_per_annotator: int = 30,
    min_annotators: int = 3,
) -> AltTestResult:
    """Run the alternative annotator test: whether the judge matches the annotators better than each of them does.

    Parameters
    ----------
    labels : mapping item -> (mapping annotator -> label)
        People's labels; items labelled by fewer than two annotators, or not by the judge, are
        left out (there is nobody to compare with).
    judge : mapping item -> label
        The judge's label of each item.
    epsilon : float, default 0.1
        The cost-benefit allowance: the judge may be this much less often the better match and
        still beat an annotator (0.1 crowd workers, 0.15 skilled annotators, 0.2 experts).
    alpha : float, default 0.05
        The false discovery rate of the Benjamini-Yekutieli correction over annotators.
    scoring : {"accuracy", "neg_rmse"}, default "accuracy"
        How a label matches the others: the share of them it equals, or minus the root mean
        squared difference (numeric labels, say a 1-5 scale).
    min_items_per_annotator : int, default 30
        Annotators with fewer comparable items are skipped (the t-test's normal approximation
        needs about 30, the authors advise).
    min_annotators : int, default 3
        The fewest annotators the test accepts: with two, each is only compared with the other,
        with no consensus to match (the authors recommend at least three).

    Returns
    -------
    AltTestResult
        Per annotator ``rho_judge``, ``rho_human``, the p-value and the corrected decision; the
        winning rate ``omega``, ``passed`` (``omega >= 0.5``) and :meth:`AltTestResult.sentence`.

    Raises
    ------
    ValueError
        Fewer than ``min_annotators`` annotators, or none left to test after skipping those with
        too few items; an unknown scoring; non-numeric labels with ``neg_rmse``.

    References
    ----------
    Calderon, Reichart and Dror, "The Alternative Annotator Test for LLM-as-a-Judge: How to
    Statistically Justify Replacing Human Annotators with LLMs", ACL 2025.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.integers(0, 3, 60)
    >>> noisy = lambda: np.where(rng.random(60) < 0.3, rng.integers(0, 3, 60), truth)
    >>> people = {a: noisy() for a in ["ann", "bob", "cem", "dia"]}
    >>> labels = {i: {a: int(people[a][i]) for a in people} for i in range(60)}
    >>> result = alternative_annotator_test(labels=labels, judge={i: int(truth[i]) for i in range(60)})
    >>> result.sentence()
    'the judge can stand in for annotators: 4 of 4 beaten, ω 1.00, ε 0.1'
    """
    if scoring not in ALT_TEST_SCORINGS:
        raise ValueError(f"scoring must be 'accuracy' or 'neg_rmse', got {scoring!r}")
    epsilon = check_probability(epsilon, "epsilon", open_interval=False)
    alpha = check_probability(alpha, "alpha")
    min_items_per_annotator = check_positive_int(min_items_per_annotator, "min_items_per_annotator")
    min_annotators = check_positive_int(min_annotators, "min_annotators")
    if min_annotators < 2:
        raise ValueError(f"min_annotators must be at least 2 (a left-out annotator needs others), got {min_annotators}")
    _check_labels(labels, judge, scoring)
    usable = {item: dict(by) for item, by in labels.items() if len(by) >= 2 and item in judge}
    annotators = sorted({a for by in labels.values() for a in by}, key=str)
    if len(annotators) < min_annotators:
        raise ValueError(
            f"the alternative annotator test needs at least {min_annotators} annotators labelling the same items, "
            f"got {len(annotators)}: {', '.join(map(str, annotators)) or 'none'}"
        )
    tested, skipped, judge_rates, human_rates, p_values, sizes = [], [], [], [], [], []
    for left_out in annotators:
        mine = [item for item, by in usable.items() if left_out in by]
        if len(mine) < min_items_per_annotator:
            skipped.append(
                (
                    left_out,
                    f"{len(mine)} items labelled with others and the judge, fewer than {min_items_per_annotator}",
                )
            )
            continue
        judge_wins = np.empty(len(mine))
        human_wins = np.empty(len(mine))
        for k, item in enumerate(mine):
            others = [label for a, label in usable[item].items() if a != left_out]
            human_score = _alignment(scoring, usable[item][left_out], others)
            judge_score = _alignment(scoring, judge[item], others)
            judge_wins[k] = judge_score >= human_score
            human_wins[k] = human_score >= judge_score
        tested.append(left_out)
        sizes.append(len(mine))
        judge_rates.append(float(judge_wins.mean()))
        human_rates.append(float(human_wins.mean()))
        p_values.append(_one_sided_p(human_wins - judge_wins, epsilon))
    if not tested:
        raise ValueError(
            f"no annotator labelled at least {min_items_per_annotator} items together with another annotator and "
            "the judge: label more items with overlap, or lower min_items_per_annotator"
        )
    if len(tested) < min_annotators:
        warnings.warn(
            f"only {len(tested)} annotators have enough items for the test; the verdict rests on few comparisons",
            UserWarning,
            stacklevel=2,
        )
    adjusted = benjamini_yekutieli(p_values)
    comparisons = tuple(
        AnnotatorComparison(a, n, rj, rh, p, float(q), bool(q <= alpha))
        for a, n, rj, rh, p, q in zip(tested, sizes, judge_rates, human_rates, p_values, adjusted)
    )
    omega = sum(c.beaten for c in comparisons) / len(comparisons)
    return AltTestResult(
        comparisons=comparisons,
        winning_rate=omega,
        advantage_probability=float(np.mean(judge_rates)),
        passed=omega >= 0.5,
        epsilon=epsilon,
        alpha=alpha,
        scoring=scoring,
        skipped=tuple(skipped),
    )
