"""Agreement between two raters: Cohen's kappa, the confusion table and per-class error rates.

The judge is a classifier; these are its error rates against people. Raw agreement misleads
when one label dominates, so every report carries kappa (agreement corrected for chance) and,
more useful still, the miss rate on the class you care about (the failure class).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._interval import Interval
from ._validation import check_probability
from .proportions import ProportionEstimate, proportion_interval, z_score

SUPPORTED = 1
UNSUPPORTED = 0


class UndefinedMetricWarning(UserWarning):
    """A metric is undefined for this input and was returned as NaN (as scikit-learn's warning).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     kappa = cohen_kappa([1, 1], [1, 1])
    >>> caught[0].category.__name__
    'UndefinedMetricWarning'
    """


KAPPA_UNDEFINED_REASON = (
    "kappa is undefined: both raters gave every item the same single label, so chance "
    "agreement is 1 and there is nothing to correct for; label items of the other class too"
)


def _labels_pair(a: Sequence, b: Sequence, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(a, (str, bytes)) or isinstance(b, (str, bytes)):
        raise TypeError("labels must be sequences of labels, not strings")
    a_arr = np.asarray(list(a) if not isinstance(a, np.ndarray) else a)
    b_arr = np.asarray(list(b) if not isinstance(b, np.ndarray) else b)
    if a_arr.ndim != 1 or b_arr.ndim != 1:
        raise ValueError(f"{names[0]} and {names[1]} must be one-dimensional sequences of labels")
    if len(a_arr) != len(b_arr):
        raise ValueError(
            f"{names[0]} and {names[1]} must label the same items in the same order: "
            f"got {len(a_arr)} and {len(b_arr)} labels"
        )
    if len(a_arr) == 0:
        raise ValueError(f"{names[0]} and {names[1]} are empty: there is nothing to compare")
    for arr, name in ((a_arr, names[0]), (b_arr, names[1])):
        if arr.dtype.kind == "f" and np.isnan(arr).any():
            raise ValueError(
                f"{name} has a missing label at position {int(np.flatnonzero(np.isnan(arr))[0])}; "
                f"compare only items both raters labelled"
            )
        if arr.dtype == object and any(x is None for x in arr):
            raise ValueError(f"{name} has a missing label (None); compare only items both raters labelled")
    return a_arr, b_arr


def _kappa_from_tables(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return kappa, observed and expected agreement of square count tables, vectorised.

    The one definition of kappa's formula in the engine: ``tables`` has shape ``(..., m, m)``
    (rows: rater 1, columns: rater 2); the results have shape ``(...)``. Kappa is NaN where the
    expected (chance) agreement is 1, that is when both raters used one and the same label.
    """
    tables = np.asarray(tables, dtype=np.float64)
    n = tables.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.trace(tables, axis1=-2, axis2=-1) / n
        expected = np.einsum("...i,...i->...", tables.sum(axis=-1), tables.sum(axis=-2)) / n**2
        kappa = (observed - expected) / (1.0 - expected)
    kappa = np.where(np.isclose(expected, 1.0, rtol=0.0, atol=1e-12), np.nan, kappa)
    return kappa, observed, expected


def _kappa_from_table(table: np.ndarray) -> tuple[float, float, float]:
    """Return (kappa, observed agreement, expected agreement) of one square count table."""
    kappa, observed, expected = _kappa_from_tables(table)
    return float(kappa), float(observed), float(expected)


def cohen_kappa(a: Sequence, b: Sequence) -> float:
    """Return Cohen's kappa, the agreement of two raters corrected for chance.

    Parameters
    ----------
    a, b : sequences of labels, same length
        Labels of the same items by two raters, in the same order. Any hashable labels
        (0/1, booleans, strings); unweighted (nominal) kappa.

    Returns
    -------
    float
        ``(p_o - p_e) / (1 - p_e)``. NaN, with an :class:`UndefinedMetricWarning` that says why,
        when chance agreement ``p_e`` is 1 (both raters used one and the same label throughout).

    References
    ----------
    Cohen, "A coefficient of agreement for nominal scales", 1960.

    Examples
    --------
    >>> human = [1] * 150 + [0] * 50
    >>> judge = [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28
    >>> round(cohen_kappa(human, judge), 3)
    0.559
    """
    a_arr, b_arr = _labels_pair(a, b, ("a", "b"))
    table, _ = _count_table(a_arr, b_arr)
    kappa, _, _ = _kappa_from_table(table)
    if math.isnan(kappa):
        warnings.warn(KAPPA_UNDEFINED_REASON, UndefinedMetricWarning, stacklevel=2)
    return kappa


def _count_table(a: np.ndarray, b: np.ndarray, labels: Sequence | None = None) -> tuple[np.ndarray, list]:
    if labels is None:
        labels = sorted(set(a.tolist()) | set(b.tolist()), key=lambda x: (str(type(x)), x))
    index = {label: i for i, label in enumerate(labels)}
    try:
        ai = np.fromiter((index[x] for x in a.tolist()), dtype=np.int64, count=len(a))
        bi = np.fromiter((index[x] for x in b.tolist()), dtype=np.int64, count=len(b))
    except KeyError as error:
        raise ValueError(f"label {error.args[0]!r} is not one of the expected labels {list(labels)}") from None
    m = len(labels)
    table = np.bincount(ai * m + bi, minlength=m * m).reshape(m, m)
    return table, list(labels)


def kappa_standard_error(table: np.ndarray) -> float:
    """Return the large-sample standard error of kappa (Fleiss, Cohen and Everitt, 1969).

    The same formula as statsmodels' ``cohens_kappa(...).std_kappa``; used for kappa's interval.

    Parameters
    ----------
    table : array-like of shape (m, m)
        Counts of items by the first rater's label (rows) and the second's (columns).

    Returns
    -------
    float
        The standard error; NaN when kappa is undefined (chance agreement is 1).

    References
    ----------
    Fleiss, Cohen and Everitt, "Large sample standard errors of kappa and weighted kappa",
    Psychological Bulletin, 1969.

    Examples
    --------
    >>> round(kappa_standard_error([[142, 8], [22, 28]]), 4)
    0.0705
    """
    table = np.asarray(table, dtype=np.float64)
    n = table.sum()
    p = table / n
    row = p.sum(axis=1)
    col = p.sum(axis=0)
    po = np.trace(p)
    pe = float(row @ col)
    if math.isclose(pe, 1.0, abs_tol=1e-12):
        return math.nan
    diag = np.diag(p)
    term1 = float(np.sum(diag * (1 - (row + col) * (1 - po) / (1 - pe)) ** 2))
    weights = (col[:, None] + row[None, :]) ** 2  # (p_.i + p_j.)^2 for cell (i, j)
    off = p * weights
    np.fill_diagonal(off, 0.0)
    term2 = (1 - po) ** 2 / (1 - pe) ** 2 * float(off.sum())
    term3 = (po * pe - 2 * pe + po) ** 2 / (1 - pe) ** 2
    variance = (term1 + term2 - term3) / (n * (1 - pe) ** 2)
    return math.sqrt(max(variance, 0.0))


@dataclass(frozen=True, kw_only=True)
class KappaEstimate(Interval):
    """Kappa with its asymptotic standard error and confidence interval.

    Parameters
    ----------
    estimate : float
        Cohen's kappa; NaN when undefined.
    low, high : float
        Bounds of the Wald interval ``estimate -/+ z * se``.
    se : float
        Large-sample standard error of kappa.
    confidence : float
        Level of the two-sided interval.
    undefined_reason : str, optional
        Why kappa is undefined (every field above is then NaN), else None.

    Examples
    --------
    >>> est = KappaEstimate(0.5, 0.3, 0.7, se=0.1, confidence=0.95)
    >>> kappa, low, high = est
    >>> kappa, est.se
    (0.5, 0.1)
    """

    se: float
    confidence: float
    undefined_reason: str | None = None


def kappa_interval(a: Sequence, b: Sequence, *, confidence: float = 0.95) -> KappaEstimate:
    """Return kappa with a Wald interval from its large-sample standard error.

    Parameters
    ----------
    a, b : sequences of labels, same length
        Labels of the same items by two raters, in the same order (any hashable labels).
    confidence : float, default 0.95
        Level of the two-sided interval.

    Returns
    -------
    KappaEstimate
        ``estimate`` is kappa, ``low`` and ``high`` are ``estimate -/+ z * se``; every field is
        NaN, with ``undefined_reason`` set, when kappa is undefined.

    References
    ----------
    Fleiss, Cohen and Everitt, 1969 (the standard error); statsmodels' ``cohens_kappa`` gives
    the same interval.

    Examples
    --------
    >>> human = [1] * 150 + [0] * 50
    >>> judge = [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28
    >>> est = kappa_interval(human, judge)
    >>> round(est.se, 4), round(est.low, 3), round(est.high, 3)
    (0.0705, 0.421, 0.697)
    """
    confidence = check_probability(confidence, "confidence")
    a_arr, b_arr = _labels_pair(a, b, ("a", "b"))
    table, _ = _count_table(a_arr, b_arr)
    kappa, _, _ = _kappa_from_table(table)
    if math.isnan(kappa):
        return KappaEstimate(
            math.nan, math.nan, math.nan, se=math.nan, confidence=confidence, undefined_reason=KAPPA_UNDEFINED_REASON
        )
    se = kappa_standard_error(table)
    z = z_score(confidence)
    return KappaEstimate(kappa, kappa - z * se, kappa + z * se, se=se, confidence=confidence)


@dataclass(frozen=True)
class BinaryAgreement:
    """How a rater (the judge) agrees with a reference rater (people) on two classes.

    ``counts[(reference, predicted)]`` is the confusion table. The failure class is the one you
    care about catching (unsupported answers): ``missed`` counts the items the reference put in it
    that the judge passed, and ``miss_rate`` is ``missed / failures``.

    Parameters
    ----------
    n : int
        Items both raters labelled.
    labels : (label, label)
        The two classes, in the order of the confusion table.
    failure_class : label
        The class whose misses matter (unsupported).
    counts : mapping (reference label, predicted label) -> int
        The confusion table.
    agreement : float
        Raw agreement, the fraction of items labelled alike.
    kappa : float
        Cohen's kappa (NaN when undefined).
    kappa_undefined_reason : str or None
        Why kappa is undefined, when it is.
    reference_rate, predicted_rate : mapping label -> float
        Each class's prevalence by the reference and by the judge.
    failures : int
        Items the reference put in the failure class.
    caught, missed : int
        Of those, how many the judge also failed, and how many it passed.
    false_alarms : int
        Items the reference passed that the judge failed.
    miss_rate : float
        ``missed / failures`` (NaN without failures).
    miss_rate_interval : ProportionEstimate or None
        Wilson interval on the miss rate (None without failures).
    sensitivity, specificity : float
        The judge's rate of catching failures, and of passing what the reference passed.
    reference_name, predicted_name : str, default "people" and "judge"
        The raters' names, used in sentences.

    Examples
    --------
    >>> report = binary_agreement([1] * 150 + [0] * 50, [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28)
    >>> report.pass_class, report.miss_rate, report.miss_sentence()
    (1, 0.44, 'the judge passed 22 of the 50 answers people found unsupported')
    """

    n: int
    labels: tuple[Any, Any]
    failure_class: Any
    counts: Mapping[tuple[Any, Any], int]
    agreement: float
    kappa: float
    kappa_undefined_reason: str | None
    reference_rate: Mapping[Any, float]
    predicted_rate: Mapping[Any, float]
    failures: int
    caught: int
    missed: int
    false_alarms: int
    miss_rate: float
    miss_rate_interval: ProportionEstimate | None
    sensitivity: float
    specificity: float
    reference_name: str = "people"
    predicted_name: str = "judge"

    @property
    def pass_class(self) -> Any:
        """The class that is not the failure class."""
        return self.labels[0] if self.labels[1] == self.failure_class else self.labels[1]

    def confusion_frame(self) -> pd.DataFrame:
        """Return the confusion table as a DataFrame: reference in rows, judge in columns."""
        labels = list(self.labels)
        data = [[self.counts[(r, p)] for p in labels] for r in labels]
        return pd.DataFrame(
            data,
            index=pd.Index(labels, name=self.reference_name),
            columns=pd.Index(labels, name=self.predicted_name),
        )

    def miss_sentence(self, *, item: str = "answers", failure_word: str = "unsupported") -> str:
        """Return the miss rate in words: "the judge passed 22 of the 50 answers people found unsupported"."""
        return (
            f"the {self.predicted_name} passed {self.missed} of the {self.failures} {item} "
            f"{self.reference_name} found {failure_word}"
        )


def binary_agreement(
    reference: Sequence,
    predicted: Sequence,
    *,
    failure_class: Any = UNSUPPORTED,
    labels: tuple[Any, Any] | None = None,
    confidence: float = 0.95,
    reference_name: str = "people",
    predicted_name: str = "judge",
) -> BinaryAgreement:
    """Compare a judge's binary verdicts with reference labels on the same items.

    Parameters
    ----------
    reference : sequence of labels
        The reference labels (people's final labels), one per item.
    predicted : sequence of labels
        The judge's verdicts on the same items, same order.
    failure_class : label, default 0
        The class whose misses matter (0 = unsupported in the spec's coding, 1 = supported).
    labels : pair of labels, optional
        The two classes; by default ``(1, 0)`` when the data are 0/1 or booleans.
    confidence : float, default 0.95
        Level of the Wilson interval on the miss rate.
    reference_name, predicted_name : str, default "people" and "judge"
        The raters' names, used in error messages and sentences.

    Returns
    -------
    BinaryAgreement

    Examples
    --------
    >>> human = [1] * 150 + [0] * 50
    >>> judge = [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28
    >>> report = binary_agreement(human, judge)
    >>> report.agreement, round(report.kappa, 3), report.missed, report.failures
    (0.85, 0.559, 22, 50)
    >>> report.predicted_rate[0], report.reference_rate[0]
    (0.18, 0.25)
    """
    ref, pred = _labels_pair(reference, predicted, (reference_name, predicted_name))
    if labels is None:
        seen = set(ref.tolist()) | set(pred.tolist())
        if seen <= {0, 1}:
            labels = (SUPPORTED, UNSUPPORTED)
        elif len(seen) == 2:
            labels = tuple(sorted(seen, key=str))  # type: ignore[assignment]
        else:
            raise ValueError(f"binary agreement needs exactly two classes, got {sorted(seen, key=str)}")
    if len(labels) != 2 or labels[0] == labels[1]:
        raise ValueError(f"labels must be two different classes, got {labels!r}")
    if failure_class not in labels:
        raise ValueError(f"failure_class {failure_class!r} is not one of the labels {labels!r}")
    table, _ = _count_table(ref, pred, list(labels))
    kappa, observed, _ = _kappa_from_table(table)
    n = int(table.sum())
    f = list(labels).index(failure_class)
    p = 1 - f
    failures = int(table[f].sum())
    caught = int(table[f, f])
    missed = int(table[f, p])
    passes = int(table[p].sum())
    false_alarms = int(table[p, f])
    miss_rate = missed / failures if failures else math.nan
    return BinaryAgreement(
        n=n,
        labels=tuple(labels),  # type: ignore[arg-type]
        failure_class=failure_class,
        counts={(labels[i], labels[j]): int(table[i, j]) for i in range(2) for j in range(2)},
        agreement=observed,
        kappa=kappa,
        kappa_undefined_reason=KAPPA_UNDEFINED_REASON if math.isnan(kappa) else None,
        reference_rate={labels[i]: float(table[i].sum() / n) for i in range(2)},
        predicted_rate={labels[j]: float(table[:, j].sum() / n) for j in range(2)},
        failures=failures,
        caught=caught,
        missed=missed,
        false_alarms=false_alarms,
        miss_rate=miss_rate,
        miss_rate_interval=proportion_interval(missed, failures, confidence=confidence) if failures else None,
        sensitivity=caught / failures if failures else math.nan,
        specificity=(passes - false_alarms) / passes if passes else math.nan,
        reference_name=reference_name,
        predicted_name=predicted_name,
    )
