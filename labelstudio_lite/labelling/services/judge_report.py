"""The judge error report: can this judge be trusted on this metric, and why (not).

Compares the final human labels (majority or adjudicated) with the judge's verdicts on the same
items: n, agreement, kappa with a bootstrap interval, the confusion table, each class's
prevalence by people and by the judge, the miss rate on the failure class (unsupported) in words
with its interval, the same per slice, warnings where the numbers cannot carry weight, and the
run's pass rate corrected for the judge's errors (Rogan-Gladen). One dict feeds the page, the API
and ``judge_report --json``, so they always agree.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalcore.engine import binary_agreement, proportion_interval
from evalcore.engine.judge import Stratum, corrected_pass_rate, kappa_bootstrap
from evalcore.services.problems import UserFacingError

from ..models import Campaign, Item, RemeasurementView, VerdictSet
from ..selectors import final_labels, judge_verdicts
from .exports import heldout_spent, leakage

MIN_ITEMS = 200
MIN_FAILURES = 30
ITERATIONS = 10_000
SUPPORTED, UNSUPPORTED = 1, 0


class RemeasureRefused(UserFacingError):
    pass


@dataclass(frozen=True)
class Pair:
    item_id: int
    row_id: int
    claim_index: int | None
    split: str
    slice: str
    stratum: str
    human: int
    judge: int


def _finite(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and not math.isfinite(value)) else value


def labelled_pairs(campaign: Campaign, verdicts: dict[int, bool], *, split: str | None = None) -> tuple[list[Pair], dict[str, int]]:
    """Items with a final human label and a judge verdict, and how many items each status holds."""
    finals = final_labels(campaign)
    statuses: dict[str, int] = defaultdict(int)
    items = Item.objects.filter(campaign=campaign).values_list("pk", "row_id", "claim_index", "split", "row__question__qtype", "stratum")
    if split:
        items = items.filter(split=split)
    pairs = []
    for pk, row_id, claim_index, item_split, qtype, stratum in items:
        final = finals[pk]
        statuses[final.status] += 1
        if final.value is None or pk not in verdicts:
            continue
        pairs.append(Pair(pk, row_id, claim_index, item_split, qtype or "(no type)", stratum,
                          SUPPORTED if final.value == "supported" else UNSUPPORTED, SUPPORTED if verdicts[pk] else UNSUPPORTED))
    return pairs, dict(statuses)


def core_stats(pairs: Sequence[Pair], *, unit_word: str, seed: int = 7) -> dict[str, Any]:
    """Agreement, kappa (bootstrap interval), confusion, prevalences and the miss rate, as a dict."""
    n = len(pairs)
    if n == 0:
        return {"n": 0}
    human = [p.human for p in pairs]
    judge = [p.judge for p in pairs]
    report = binary_agreement(human, judge, failure_class=UNSUPPORTED, labels=(SUPPORTED, UNSUPPORTED))
    table = [[report.counts[(SUPPORTED, SUPPORTED)], report.counts[(SUPPORTED, UNSUPPORTED)]],
             [report.counts[(UNSUPPORTED, SUPPORTED)], report.counts[(UNSUPPORTED, UNSUPPORTED)]]]
    kappa = kappa_bootstrap(table, iterations=ITERATIONS, seed=seed)
    miss = report.miss_rate_interval
    people_passed = int(sum(table[0]))
    false_fail = proportion_interval(table[0][1], people_passed) if people_passed else None
    return {
        "n": n,
        "agreement": report.agreement,
        "kappa": _finite(report.kappa),
        "kappa_low": _finite(kappa.low),
        "kappa_high": _finite(kappa.high),
        "kappa_undefined": report.kappa_undefined_reason,
        "confusion": {
            "people_supported": {"judge_supported": table[0][0], "judge_unsupported": table[0][1]},
            "people_unsupported": {"judge_supported": table[1][0], "judge_unsupported": table[1][1]},
        },
        "people_unsupported_rate": report.reference_rate[UNSUPPORTED],
        "judge_unsupported_rate": report.predicted_rate[UNSUPPORTED],
        "failures": report.failures,
        "caught": report.caught,
        "missed": report.missed,
        "miss_rate": _finite(report.miss_rate),
        "miss_low": miss.low if miss else None,
        "miss_high": miss.high if miss else None,
        "miss_sentence": (
            f"the judge passed {report.missed} of the {report.failures} {unit_word} people found unsupported"
            if report.failures else f"people found no {unit_word} unsupported"
        ),
        "prevalence_sentence": (
            f"the judge flags {_pct(report.predicted_rate[UNSUPPORTED])} as unsupported against a true "
            f"{_pct(report.reference_rate[UNSUPPORTED])}"
        ),
        "false_fails": table[0][1],
        "false_fail_rate": (table[0][1] / people_passed) if people_passed else None,
        "false_fail_low": false_fail.low if false_fail else None,
        "false_fail_high": false_fail.high if false_fail else None,
    }


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"


def verdict_line(stats: dict[str, Any], *, fit_kappa: float, fit_miss_rate: float, unit_word: str) -> dict[str, Any]:
    if stats.get("n", 0) == 0 or not stats.get("failures"):
        why = "no labelled items yet" if stats.get("n", 0) == 0 else f"people found no {unit_word} unsupported, so the miss rate is unknown"
        return {"fit": None, "line": f"VERDICT: not enough labels to judge: {why}"}
    kappa = stats["kappa"]
    miss = stats["miss_rate"]
    fit = kappa is not None and kappa >= fit_kappa and miss <= fit_miss_rate
    reasons = (
        f"misses {_pct(miss)} of unsupported {unit_word} ({stats['missed']} of {stats['failures']}, 95 % CI "
        f"{_pct(stats['miss_low'])[:-2]}–{_pct(stats['miss_high'])}); kappa "
        + (f"{kappa:.2f} ({stats['kappa_low']:.2f}–{stats['kappa_high']:.2f})" if kappa is not None else "undefined")
    )
    head = "fit to gate" if fit else "not fit to gate"
    return {"fit": fit, "line": f"VERDICT: {head}: {reasons}"}


def _rollup_to_answers(pairs: Sequence[Pair]) -> list[Pair]:
    """An answer is unsupported if any of its labelled claims is (by people; by the judge)."""
    by_row: dict[int, list[Pair]] = defaultdict(list)
    for p in pairs:
        by_row[p.row_id].append(p)
    out = []
    for row_id, claims in by_row.items():
        first = claims[0]
        out.append(Pair(
            first.item_id, row_id, None, first.split, first.slice, first.stratum,
            SUPPORTED if all(c.human == SUPPORTED for c in claims) else UNSUPPORTED,
            SUPPORTED if all(c.judge == SUPPORTED for c in claims) else UNSUPPORTED,
        ))
    return out


def _corrected(campaign: Campaign, pairs: Sequence[Pair]) -> dict[str, Any] | None:
    """The run's judge pass rate corrected for its errors, from the campaign's strata and labels."""
    available = {s["stratum"]: (s["available"], s["judge_supported"]) for s in campaign.strata}
    if campaign.parent_id is not None:
        # a fresh held-out sample's strata count only the items no earlier campaign took; the run holds them all
        from collections import Counter

        from .campaigns import population, stratum_label

        counts = Counter(c.stratum for c in population(campaign.run, campaign.unit))
        available = {stratum_label(key): (n, key[1]) for key, n in counts.items()}
    if not available:
        return None
    run_total = sum(a for a, _ in available.values())
    run_passes = sum(a for a, passed in available.values() if passed)
    by_stratum: dict[str, list[Pair]] = defaultdict(list)
    for p in pairs:
        by_stratum[p.stratum].append(p)
    strata = []
    for name, members in by_stratum.items():
        if name not in available:
            continue
        total, judge_pass = available[name]
        strata.append(Stratum(judge_pass=judge_pass, labelled=len(members), human_pass=sum(p.human for p in members),
                              weight=total / len(members)))
    if not strata:
        return None
    try:
        rate = corrected_pass_rate(run_passes=run_passes, run_total=run_total, strata=strata, iterations=ITERATIONS, seed=campaign.seed)
    except ValueError:
        return None
    return {
        "raw": rate.raw, "corrected": _finite(rate.corrected), "low": _finite(rate.low), "high": _finite(rate.high),
        "sensitivity": _finite(rate.sensitivity), "specificity": _finite(rate.specificity), "note": rate.note,
        "run_items": run_total, "iterations": rate.iterations,
    }


def judge_report(campaign: Campaign, *, verdict_set: VerdictSet | None = None) -> dict[str, Any]:
    """Build the whole report as a JSON-ready dict (the page, the API and the CLI render this)."""
    unit_word = "claims" if campaign.unit == Campaign.Unit.CLAIM else "answers"
    verdicts = judge_verdicts(campaign, verdict_set)
    pairs, statuses = labelled_pairs(campaign, verdicts)
    stats = core_stats(pairs, unit_word=unit_word, seed=campaign.seed)
    judge = verdict_set.judge_config if verdict_set else campaign.run.judge_config
    slices = []
    for name in sorted({p.slice for p in pairs}):
        members = [p for p in pairs if p.slice == name]
        slices.append({"slice": name, **core_stats(members, unit_word=unit_word, seed=campaign.seed)})
    total_items = sum(statuses.values())
    warnings = []
    n = stats.get("n", 0)
    if n < MIN_ITEMS:
        warnings.append(f"Only {n} labelled {unit_word}: the spec asks for at least {MIN_ITEMS} per judge metric, so the intervals are wide.")
    if n and stats.get("failures", 0) < MIN_FAILURES:
        warnings.append(
            f"Only {stats.get('failures', 0)} {unit_word} that people found unsupported: the miss rate rests on few items "
            f"(95 % CI {_pct(stats.get('miss_low'))}–{_pct(stats.get('miss_high'))})."
        )
    conflicts = statuses.get("conflict", 0)
    if conflicts:
        many = " (many)" if total_items and conflicts / total_items > 0.05 else ""
        warnings.append(f"{conflicts} {unit_word} have conflicting labels{many} and are left out until adjudicated.")
    pending = statuses.get("in_progress", 0) + statuses.get("unlabelled", 0)
    if pending:
        warnings.append(f"Labels still in progress: {pending} of {total_items} {unit_word} have no final label yet and are left out.")
    leaked = leakage(campaign)
    if leaked.leaked_items:
        versions = ", ".join(f"v{e.version}" for e in leaked.leaked_exports)
        warnings.append(f"Leakage: {leaked.leaked_items} held-out {unit_word} were exported ({versions}); a re-measurement on the held-out split is no longer clean.")
    spent = heldout_spent(campaign)
    if spent:
        warnings.append(spent.message)
    oversampled = any(abs(s["sampled"] / s["available"] - campaign.strata[0]["sampled"] / campaign.strata[0]["available"]) > 0.01
                      for s in campaign.strata if s["available"]) if campaign.strata else False
    report: dict[str, Any] = {
        "campaign": campaign.name,
        "run": campaign.run.name,
        "eval_set": campaign.run.version.label,
        "unit": campaign.unit,
        "unit_word": unit_word,
        "question": campaign.judge_question,
        "metric": "faithfulness",
        "judge": {
            "model": judge.model if judge else None, "model_version": judge.model_version if judge else None,
            "prompt_hash": judge.prompt_hash if judge else None, "config_hash": judge.config_hash if judge else None,
            "source": "imported verdicts" if verdict_set else "the run's judge",
        },
        "thresholds": {"kappa": campaign.fit_kappa, "miss_rate": campaign.fit_miss_rate},
        "verdict": verdict_line(stats, fit_kappa=campaign.fit_kappa, fit_miss_rate=campaign.fit_miss_rate, unit_word=unit_word),
        "warnings": warnings,
        "statuses": statuses,
        "overall": stats,
        "slices": slices,
        "oversampled": oversampled,
        "leakage": leaked.as_dict(),
        "heldout_spent": spent.as_dict() if spent else None,
        "corrected": _corrected(campaign, pairs) if verdict_set is None else None,
    }
    if campaign.unit == Campaign.Unit.CLAIM:
        answers = _rollup_to_answers(pairs)
        report["answers"] = core_stats(answers, unit_word="answers", seed=campaign.seed)
    return report


def remeasure(campaign: Campaign, verdict_set: VerdictSet, *, split: str = "heldout", viewer: Any = None) -> dict[str, Any]:
    """Compare a new judge config with the run's judge on the held-out split only, paired on items."""
    from evalcore.engine import paired_bootstrap

    if split != Item.Split.HELDOUT:
        raise RemeasureRefused(
            "Re-measuring on the tuning split is refused: the new judge prompt was tuned on those items (or could have been), "
            "so it would overstate the improvement. Re-measure on the held-out split."
        )
    if verdict_set.campaign_id != campaign.pk:
        raise RemeasureRefused("those verdicts belong to another campaign")
    unit_word = "claims" if campaign.unit == Campaign.Unit.CLAIM else "answers"
    old = judge_verdicts(campaign)
    new = judge_verdicts(campaign, verdict_set)
    pairs_old, _ = labelled_pairs(campaign, old, split=Item.Split.HELDOUT)
    pairs_new = {p.item_id: p for p in labelled_pairs(campaign, new, split=Item.Split.HELDOUT)[0]}
    paired_old = [p for p in pairs_old if p.item_id in pairs_new]
    paired_new = [pairs_new[p.item_id] for p in paired_old]
    result: dict[str, Any] = {
        "campaign": campaign.name, "split": "heldout", "n": len(paired_old),
        "old_judge": str(campaign.run.judge_config) if campaign.run.judge_config else "the run's judge",
        "new_judge": str(verdict_set.judge_config),
        "old": core_stats(paired_old, unit_word=unit_word, seed=campaign.seed),
        "new": core_stats(paired_new, unit_word=unit_word, seed=campaign.seed),
        "change_in_agreement": None,
    }
    if len(paired_old) >= 2:
        agree_old = [float(p.human == p.judge) for p in paired_old]
        agree_new = [float(p.human == p.judge) for p in paired_new]
        boot = paired_bootstrap(agree_old, agree_new, iterations=ITERATIONS, seed=campaign.seed)
        result["change_in_agreement"] = {"mean": boot.mean, "low": boot.low, "high": boot.high, "n": boot.n}
    missing = Item.objects.filter(campaign=campaign, split=Item.Split.HELDOUT).exclude(verdicts__verdict_set=verdict_set).count()
    result["heldout_items_without_new_verdicts"] = missing
    if viewer is not None:
        RemeasurementView.objects.create(campaign=campaign, verdict_set=verdict_set, viewed_by=viewer if getattr(viewer, "pk", None) else None)
    return result
