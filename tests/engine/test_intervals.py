"""Every interval the engine returns has one shape: ``Interval(estimate, low, high)`` plus extras."""

from __future__ import annotations

import dataclasses

import pytest

from evalcore import engine
from evalcore.engine import Interval
from evalcore.engine.judge import CorrectedRate, KappaBootstrap, Stratum, corrected_pass_rate, kappa_bootstrap

from . import spec_reference as spec

RESULTS = {
    "paired_bootstrap": lambda: engine.paired_bootstrap([0, 1, 1, 0] * 10, [1, 1, 1, 0] * 10, iterations=200),
    "proportion_interval": lambda: engine.proportion_interval(22, 50),
    "kappa_interval": lambda: engine.kappa_interval(spec.SPEC_HUMAN, spec.SPEC_JUDGE),
    "binary_agreement.miss_rate_interval": lambda: (
        engine.binary_agreement(spec.SPEC_HUMAN, spec.SPEC_JUDGE).miss_rate_interval
    ),
    "kappa_bootstrap": lambda: kappa_bootstrap([[142, 8], [22, 28]], iterations=200),
    "corrected_pass_rate": lambda: corrected_pass_rate(
        run_passes=82,
        run_total=100,
        strata=[Stratum(True, 40, 36, 82 / 40), Stratum(False, 20, 4, 18 / 20)],
        labels_from_run=False,
        iterations=200,
    ),
}
CLASSES = (engine.BootstrapResult, engine.ProportionEstimate, engine.KappaEstimate, KappaBootstrap, CorrectedRate)


@pytest.mark.parametrize("name", RESULTS)
def test_every_interval_result_is_an_interval_with_estimate_low_high_first(name):
    result = RESULTS[name]()
    assert isinstance(result, Interval)
    assert [f.name for f in dataclasses.fields(result)][:3] == ["estimate", "low", "high"]
    estimate, low, high = result
    assert (estimate, low, high) == (result.estimate, result.low, result.high)
    assert low <= estimate <= high


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_extras_of_every_interval_class_are_keyword_only(cls):
    assert issubclass(cls, Interval) and dataclasses.is_dataclass(cls)
    extras = [f for f in dataclasses.fields(cls) if f.name not in ("estimate", "low", "high")]
    assert extras and all(f.kw_only for f in extras)
    with pytest.raises(dataclasses.FrozenInstanceError):
        RESULTS["proportion_interval"]().estimate = 0.0


def test_the_spec_unpacks_paired_bootstrap_as_mean_lo_hi_and_so_can_the_engine():
    base, cand = spec.spec_bootstrap_data()
    mean, lo, hi = engine.paired_bootstrap(base, cand)
    assert round(mean, 3) == -0.043 and lo < mean < hi < 0
