"""Re-measure a new judge config against the run's judge on the held-out split, paired on the same items.

Only the held-out split: a prompt tuned on the tuning split's disagreements would look better
there than it is. A re-measurement is shown once someone deliberately opened it
(:func:`remeasurement_open`, a POST that records a :class:`RemeasurementView`): tuning again after
that spends the held-out split (see :func:`.exports.heldout_spent`). Reading it changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalcore.engine import paired_bootstrap
from evalcore.services.problems import UserFacingError

from ..models import Campaign, Item, RemeasurementView, VerdictSet
from ..results import Result
from ..selectors import judge_verdicts
from .judge_stats import ITERATIONS, CoreStats, core_stats, labelled_pairs, stratum_population, unit_word


class RemeasureRefused(UserFacingError):
    pass


@dataclass(frozen=True)
class AgreementChange(Result):
    """New minus old agreement on the paired items, with its paired bootstrap interval."""

    mean: float
    low: float
    high: float
    n: int


@dataclass(frozen=True)
class Remeasurement(Result):
    campaign: str
    split: str
    n: int
    old_judge: str
    new_judge: str
    old: CoreStats
    new: CoreStats
    change_in_agreement: AgreementChange | None
    heldout_items_without_new_verdicts: int


def remeasurement_open(*, campaign: Campaign, verdict_set: VerdictSet, user: Any = None) -> RemeasurementView:
    """Record that someone opened the re-measurement of ``verdict_set``: tuning again after this spends the held-out split."""
    if verdict_set.campaign_id != campaign.pk:
        raise RemeasureRefused("those verdicts belong to another campaign")
    return RemeasurementView.objects.create(
        campaign=campaign, verdict_set=verdict_set, viewed_by=user if getattr(user, "pk", None) else None
    )


def remeasure(*, campaign: Campaign, verdict_set: VerdictSet, split: str = "heldout") -> Remeasurement:
    """Compare a new judge config with the run's judge on the held-out split only, paired on items (a read)."""
    if split != Item.Split.HELDOUT:
        raise RemeasureRefused(
            "Re-measuring on the tuning split is refused: the new judge prompt was tuned on those items (or could have been), "
            "so it would overstate the improvement. Re-measure on the held-out split."
        )
    if verdict_set.campaign_id != campaign.pk:
        raise RemeasureRefused("those verdicts belong to another campaign")
    word = unit_word(campaign)
    strata = stratum_population(campaign)
    pairs_old, _ = labelled_pairs(campaign, judge_verdicts(campaign), split=Item.Split.HELDOUT)
    pairs_new = {
        p.item_id: p
        for p in labelled_pairs(campaign, judge_verdicts(campaign, verdict_set), split=Item.Split.HELDOUT)[0]
    }
    paired_old = [p for p in pairs_old if p.item_id in pairs_new]
    paired_new = [pairs_new[p.item_id] for p in paired_old]
    change = None
    if len(paired_old) >= 2:
        agree_old = [float(p.human == p.judge) for p in paired_old]
        agree_new = [float(p.human == p.judge) for p in paired_new]
        boot = paired_bootstrap(agree_old, agree_new, iterations=ITERATIONS, seed=campaign.seed)
        change = AgreementChange(mean=boot.estimate, low=boot.low, high=boot.high, n=boot.n)
    missing = (
        Item.objects.filter(campaign=campaign, split=Item.Split.HELDOUT)
        .exclude(verdicts__verdict_set=verdict_set)
        .count()
    )
    return Remeasurement(
        campaign=campaign.name,
        split="heldout",
        n=len(paired_old),
        old_judge=str(campaign.run.judge_config) if campaign.run.judge_config else "the run's judge",
        new_judge=str(verdict_set.judge_config),
        old=core_stats(paired_old, unit_word=word, seed=campaign.seed, strata=strata),
        new=core_stats(paired_new, unit_word=word, seed=campaign.seed, strata=strata),
        change_in_agreement=change,
        heldout_items_without_new_verdicts=missing,
    )
