"""Is the judge behind a judge metric fit to gate? A judge metric is worth nothing until people checked the judge.

The judge that scored a run is a pinned :class:`~evalcore.models.JudgeConfig`. Whether people have
validated it (a judge report on a labelling campaign, or a re-measurement on held-out labels) is
known to the labelling app, which registers a :class:`JudgeValidationSource` here; evalcore asks
it and applies the gate's judge policy to every decision on a judge metric:

* ``review`` (the default): a decision on a metric scored by a judge that is not certified
  ``trusted`` on that metric becomes ``review``, with the reason in words, whatever the data
  alone said; and so does a slice's decision where the judge is ``untrusted`` on that slice;
* ``warn``: the decision stands; the reason is logged and shown beside it;
* ``off``: the judge's validation is recorded but not used.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from ..models import JudgeConfig, Run
from .problems import UserFacingError

FIT, NOT_FIT, UNVALIDATED, INCONCLUSIVE = "fit", "not_fit", "unvalidated", "inconclusive"
#: The metric a validation is about when none is named (the only one campaigns could validate before).
DEFAULT_METRIC = "faithfulness"
JUDGE_POLICIES = ("review", "warn", "off")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"


@dataclass(frozen=True, kw_only=True)
class JudgeValidation:
    """What people found of one judge config, and whether that makes it fit to gate."""

    status: str  # FIT (certified trusted), NOT_FIT (untrusted), INCONCLUSIVE or UNVALIDATED
    judge: str  # "gpt-x-2026-05 · prompt f7c5e4"
    metric: str = DEFAULT_METRIC
    config_hash: str | None = None
    unit_word: str = "items"
    n: int = 0
    failures: int = 0
    missed: int = 0
    kappa: float | None = None
    kappa_low: float | None = None
    kappa_high: float | None = None
    miss_rate: float | None = None
    miss_low: float | None = None
    miss_high: float | None = None
    fit_kappa: float | None = None
    fit_miss_rate: float | None = None
    campaign: str | None = None
    source: str | None = None  # "judge report" or "held-out re-measurement"
    validated_at: str | None = None  # ISO date of the newest label or verdict it rests on
    url: str | None = None
    stale: str = ""  # why a newer measurement makes this one out of date, or ""
    why_not: str = ""  # for UNVALIDATED: what is missing
    certificate: int | None = None  # the certificate's id
    guideline_version: int | None = None
    more_failure_labels: int | None = None
    reasons: tuple[str, ...] = ()  # the certificate's reasons in words
    slices: tuple[dict[str, Any], ...] = ()  # per slice with enough labels: {"slice", "state", "reason"}
    outdated: bool = False  # stale because the guideline or the metric's definition changed since: it no longer counts

    @property
    def fit(self) -> bool:
        """Certified trusted, and not outdated by a changed guideline or metric definition."""
        return self.status == FIT and not self.outdated

    def slice_untrusted(self, name: str) -> dict[str, Any] | None:
        """The slice's certificate when it says the judge is untrusted there."""
        return next((s for s in self.slices if s["slice"] == name and s["state"] == "untrusted"), None)

    @property
    def reason(self) -> str:
        """The validation in words, as the gate logs it beside a decision."""
        judge = f"judge {self.judge}"
        if self.status == UNVALIDATED:
            return (
                f"{judge} was never validated against people on {self.metric}"
                f"{': ' + self.why_not if self.why_not else ''}; not fit to gate"
            )
        if self.reasons:
            state = {FIT: "trusted", NOT_FIT: "untrusted", INCONCLUSIVE: "inconclusive"}[self.status]
            where = (
                f" (certificate #{self.certificate}, guideline v{self.guideline_version}, campaign {self.campaign}, "
                f"{self.source}{', ' + self.validated_at[:10] if self.validated_at else ''})"
            )
            stale = f"; stale: {self.stale}" if self.stale else ""
            verdict = "fit to gate" if self.fit else "not fit to gate"
            return f"{judge} on {self.metric} is {state}: {'; '.join(self.reasons)}; {verdict}{where}{stale}"
        interval = f"(CI {_pct(self.miss_low)[:-2]}–{_pct(self.miss_high)})"
        kappa = "kappa undefined" if self.kappa is None else f"kappa {self.kappa:.2f}"
        words = f"{judge} misses {_pct(self.miss_rate)} of unsupported {self.unit_word} {interval}, {kappa}"
        where = (
            f" (campaign {self.campaign}, {self.source}{', ' + self.validated_at[:10] if self.validated_at else ''})"
        )
        stale = f"; stale: {self.stale}" if self.stale else ""
        verdict = "fit to gate" if self.status == FIT else "not fit to gate"
        return f"{words}; {verdict}{where}{stale}"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "reason": self.reason}


@dataclass(frozen=True)
class CorrectedPassRate:
    """A run's judge pass rate and the same rate corrected for the judge's known errors.

    ``corrected``/``low``/``high`` are the estimate the tool uses, named by ``method``: the
    prediction-powered one when people labelled this run's rows (with the labels-only estimate and
    what the judge was worth beside it), else Rogan–Gladen transported from the judge's validation.
    ``labels_only*`` are the labels alone as a simple random sample of as many labels would give them.
    """

    run: str
    raw: float
    corrected: float | None
    low: float | None
    high: float | None
    items: int
    note: str = ""
    method: str = "Rogan–Gladen"
    rogan_gladen: float | None = None
    rogan_gladen_low: float | None = None
    rogan_gladen_high: float | None = None
    labels_only: float | None = None
    labels_only_low: float | None = None
    labels_only_high: float | None = None
    worth: str = ""
    metric: str = DEFAULT_METRIC
    slice: str = "all"
    campaign: str = ""  # the campaign whose labels correct it (on another run: the rate is transported)
    labels: int | None = None


class JudgeValidationSource(Protocol):
    """What the labelling app tells evalcore about judge configs (registered at start-up)."""

    def validation(self, config: JudgeConfig, metric: str = DEFAULT_METRIC) -> JudgeValidation | None: ...

    def corrected_pass_rate(self, config: JudgeConfig, run: Run) -> CorrectedPassRate | None: ...

    def validations(self, config: JudgeConfig) -> list[JudgeValidation]:
        """Every measurement of the config against people, newest first (whether it counts or not)."""
        ...


@dataclass
class _Registry:
    sources: list[JudgeValidationSource] = field(default_factory=list)


_REGISTRY = _Registry()


def register_judge_validation_source(source: JudgeValidationSource) -> None:
    """Register where validations of judge configs come from (the labelling app does, in ``ready()``); once per class."""
    if not any(type(known) is type(source) for known in _REGISTRY.sources):
        _REGISTRY.sources.append(source)


def judge_validation(config: JudgeConfig | None, metric: str = DEFAULT_METRIC) -> JudgeValidation:
    """Return the judge config's current certificate on ``metric``; UNVALIDATED when nobody checked it."""
    if config is None:
        return JudgeValidation(
            status=UNVALIDATED, judge="(none pinned)", metric=metric, why_not="the runs carry no judge config"
        )
    for source in _REGISTRY.sources:
        found = source.validation(config, metric)
        if found is not None:
            return found
    return JudgeValidation(
        status=UNVALIDATED,
        judge=str(config),
        metric=metric,
        config_hash=config.config_hash,
        why_not=f"no labelling campaign on {metric} has labels on a run scored by it",
    )


def judge_validations(config: JudgeConfig) -> list[JudgeValidation]:
    """Every campaign that measured the config against people, and how it did (a config page lists them)."""
    out: list[JudgeValidation] = []
    for source in _REGISTRY.sources:
        out.extend(getattr(source, "validations", lambda config: [])(config))
    return out


def judge_certificates(config: JudgeConfig) -> list[dict[str, Any]]:
    """Every stored certificate of the config, newest first (superseded ones too), each with a ``line`` in words."""
    out: list[dict[str, Any]] = []
    for source in _REGISTRY.sources:
        out.extend(getattr(source, "certificates", lambda config: [])(config))
    return out


def corrected_pass_rates(config: JudgeConfig | None, runs: list[Run]) -> list[CorrectedPassRate]:
    """The judge pass rate of each run, corrected for the errors people found in the judge (where they did)."""
    if config is None:
        return []
    out = []
    for run in runs:
        for source in _REGISTRY.sources:
            rate = source.corrected_pass_rate(config, run)
            if rate is not None:
                out.append(rate)
                break
    return out


def check_judge_policy(policy: str) -> str:
    if policy not in JUDGE_POLICIES:
        raise UserFacingError(f"the judge policy is one of {', '.join(JUDGE_POLICIES)}, got {policy!r}")
    return policy
