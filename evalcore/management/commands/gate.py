"""gate --base RUN --candidate RUN: the release gate for CI. Exit 0 pass, 3 review, 4 block, 1 error."""

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from evalcore.engine import BLOCK, PASS, REVIEW
from evalcore.engine.multiplicity import CORRECTIONS

from ...jobs.kinds import GateParams, request_gate
from ...models import Comparison
from ...services.comparisons import comparison_as_dict, family_sentence, headline_decision, reviews_to_settle
from ...services.judge_correction import JUDGE_CORRECTIONS
from ...services.judge_fitness import JUDGE_POLICIES
from ..cli import base_and_candidate, run_job_cli

#: Exit codes for CI: pass 0, review 3, block 4 (and 1 for an error, as every failed command).
EXIT = {PASS: 0, REVIEW: 3, BLOCK: 4}


def _margin_pair(text: str) -> tuple[str, float]:
    metric, sep, value = text.partition("=")
    if not sep:
        raise CommandError(f"--margin-for takes METRIC=VALUE, got {text!r}")
    try:
        return metric.strip(), float(value)
    except ValueError:
        raise CommandError(f"--margin-for {text!r}: {value!r} is not a number") from None


class Command(BaseCommand):
    help = "Compare a candidate run with a baseline (paired bootstrap per metric and slice) and apply the non-inferiority gate."
    # CI calls this on every change, in a fresh process: the system checks would load every URL, view and the
    # API schema (about a second) to decide nothing about a comparison. `manage.py check` runs them.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--base", required=True, help="baseline run name (or #id)")
        parser.add_argument("--candidate", required=True, help="candidate run name (or #id)")
        parser.add_argument("--evalset", help="NAME or NAME@VERSION, when run names repeat across eval sets")
        parser.add_argument(
            "--metric", action="append", dest="metrics", help="metric to gate (repeat; default: every shared metric)"
        )
        parser.add_argument(
            "--slice-by",
            default="type",
            choices=["type", "none"],
            help="slice by question type (default) or not at all",
        )
        parser.add_argument("--margin", type=float, help="largest tolerated drop for every metric (default 0.02)")
        parser.add_argument(
            "--margin-for", action="append", default=[], metavar="METRIC=VALUE", help="a margin for one metric"
        )
        parser.add_argument(
            "--lower-is-better",
            action="append",
            default=[],
            metavar="METRIC",
            help="a metric where a rise is a regression",
        )
        parser.add_argument(
            "--judge-policy",
            choices=JUDGE_POLICIES,
            help="what an unvalidated or unfit judge does to judge metrics (default: GATE_JUDGE_POLICY, review)",
        )
        parser.add_argument(
            "--correction",
            choices=CORRECTIONS,
            help="family-wise correction of 'block' over every metric and slice: holm (Holm's step-down) or none "
            "(each decision alone); default: GATE_CORRECTION, holm",
        )
        parser.add_argument(
            "--judge-correction",
            choices=JUDGE_CORRECTIONS,
            default="none",
            help="ppi: decide judge metrics on the prediction-powered difference between the runs where people "
            "labelled both runs' rows (strata: each run's campaign strata, slice x judge verdict; too few labels: "
            "the raw judge difference, said so); none (default): the judge's raw difference",
        )
        parser.add_argument("--json", action="store_true", help="print every decision and its interval as JSON")

    def handle(self, *args, **options):
        base, candidate = base_and_candidate(options)
        params = GateParams(
            base=base.pk,
            candidate=candidate.pk,
            metrics=options["metrics"] or [],
            slice_by=None if options["slice_by"] == "none" else "type",
            margin=options["margin"],
            margins=dict(_margin_pair(m) for m in options["margin_for"]),
            lower_is_better=options["lower_is_better"],
            judge_policy=options["judge_policy"],
            correction=options["correction"],
            judge_correction=options["judge_correction"],
        )
        result = run_job_cli(request_gate, params=params, label="gate", stderr=self.stderr, quiet=options["json"])
        comparison = Comparison.objects.select_related("base__version__eval_set", "candidate").get(
            pk=result["comparison_id"]
        )
        data = comparison_as_dict(comparison)
        if options["json"]:
            self.stdout.write(json.dumps(data, indent=2))
        else:
            self.stdout.write(render_table(data))
        if EXIT[comparison.overall]:
            sys.exit(EXIT[comparison.overall])


def _fmt(value, signed=False):
    if value is None:
        return "—"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _fmt_p(value) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if value >= 0.001 else f"{value:.0e}"


def _correction_lines(data: dict) -> list[str]:
    """Which difference decided each judge metric's cells, under a judge correction."""
    if data.get("judge_correction", "none") == "none":
        return []
    lines = [f"judge correction: {data['judge_correction']}"]
    for d in data["decisions"]:
        if d.get("judge_correction"):
            where = "" if d["slice"] == "all" else f" in slice {d['slice']}"
            lines.append(f"  {d['metric']}{where}: {d['judge_correction']['sentence']}")
    return lines


def render_table(data: dict) -> str:
    margins = sorted(set(data["margins"].values()))
    margin_text = ", ".join(f"{m:g}" for m in margins)
    lines = [
        f"{data['eval_set']} · baseline {data['base']['name']} vs candidate {data['candidate']['name']} · "
        f"{data['n_paired']} paired questions · margin {margin_text} · {data['iterations']:,} resamples, seed {data['seed']}",
        family_sentence(correction=data["correction"], family_size=data["family_size"], confidence=data["confidence"]),
        "",
        f"{'METRIC':<18} {'SLICE':<14} {'BASE':>7} {'CAND':>7} {'DIFF':>7}  {'95% CI':<18} {'N':>6} {'P':>6} {'P ADJ':>6}  STATUS",
    ]
    for d in data["decisions"]:
        interval = f"[{_fmt(d['low'], True)}, {_fmt(d['high'], True)}]" if d["low"] is not None else "(too few pairs)"
        lines.append(
            f"{d['metric']:<18} {d['slice']:<14} {_fmt(d['base_mean']):>7} {_fmt(d['cand_mean']):>7} {_fmt(d['mean'], True):>7}  "
            f"{interval:<18} {d['n']:>6} {_fmt_p(d.get('p_value')):>6} {_fmt_p(d.get('p_adjusted')):>6}  {d['status'].upper()}"
        )
    worst = headline_decision(data["decisions"], data["overall"])
    reason = (
        f"  ({worst['message']}{'' if worst['slice'] == 'all' else ' in slice ' + worst['slice']})"
        if worst and EXIT[data["overall"]]
        else ""
    )
    lines += ["", f"OVERALL: {data['overall'].upper()}{reason}"]
    judge = next((d["judge"] for d in data["decisions"] if d.get("judge")), None)
    if judge:
        lines.append(f"judge metrics: {judge['reason']} · judge policy: {data['judge_policy']}")
    lines += _correction_lines(data)
    reviews = reviews_to_settle(data["decisions"])
    for d in reviews.by_data:
        where = "" if d["slice"] == "all" else f" in slice {d['slice']}"
        lines.append(f"to settle {d['metric']}{where}: {d['to_settle']['sentence']}")
    if reviews.by_judge:
        lines.append(f"to settle the rest: {reviews.judge_sentence}")
    for rate in data.get("judge_rates") or []:
        corrected = (
            f"{100 * rate['corrected']:.1f} % ({100 * rate['low']:.1f}–{100 * rate['high']:.1f} %)"
            if rate["corrected"] is not None
            else "—"
        )
        where = f"{rate.get('metric', 'faithfulness')}" + (
            "" if rate.get("slice", "all") == "all" else f" · {rate['slice']}"
        )
        lines.append(
            f"judge pass rate of {rate['run']} on {where}: {100 * rate['raw']:.1f} % raw, {corrected} corrected for "
            f"the judge's errors{' (' + rate['campaign'] + ')' if rate.get('campaign') else ''}"
        )
    for metric, why in data["excluded_metrics"].items():
        lines.append(f"not compared: {metric}: {why}")
    for note in data["notes"]:
        lines.append(f"note: {note}")
    return "\n".join(lines)
