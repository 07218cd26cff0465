"""create_campaign --run RUN --name NAME --unit answer|claim --size N: a seeded, stratified labelling sample.

With --plan nothing is created: it prints what the campaign would sample and measure (the
half-widths its judge report will show, and the items a target needs), as the campaign form does.
"""

import json

from django.core.management.base import BaseCommand, CommandError

from evalcore.selectors import run_by_ref
from evalcore.services.problems import UserFacingError

from ...services.campaigns import Plan, allocation_options, campaign_create, plan_assumptions, plan_campaign
from ...services.label_sets import label_set

STRATA_HEADER = f"{'stratum':<40} {'available':>9} {'sampled':>8} {'tuning':>7} {'held out':>9}"


def strata_lines(strata: list[dict]) -> list[str]:
    return [STRATA_HEADER] + [
        f"{s['stratum']:<40} {s['available']:>9} {s['sampled']:>8} {s['tuning']:>7} {s['heldout']:>9}" for s in strata
    ]


def plan_lines(plan: Plan) -> list[str]:
    """The plan in words: what the campaign will measure, the held-out split, the notes and the assumptions."""
    if plan.precision is None:
        return [f"no plan: {plan.precision_error}"]
    precision = plan.precision
    lines = [f"{precision.summary}.", f"{precision.heldout[0].upper()}{precision.heldout[1:]}."]
    if precision.plan.overlap > 1:
        lines.append(f"{precision.plan.labels:,} labels to collect ({precision.plan.overlap} per item).")
    lines += [f"note: {note}" for note in (*precision.plan.notes, *plan.warnings)]
    lines.append(f"assuming {precision.assumptions}; the miss rate assumed is {plan.assumed_from}")
    return lines


class Command(BaseCommand):
    help = "Create a labelling campaign from a run (a size at or above the run's item count takes every item); --plan only plans it."

    def add_arguments(self, parser):
        parser.add_argument("--run", required=True, help="run name (or #id)")
        parser.add_argument("--evalset", help="NAME or NAME@VERSION when run names repeat")
        parser.add_argument("--name", help="the campaign's name (not needed with --plan)")
        parser.add_argument("--unit", required=True, choices=["answer", "claim"])
        parser.add_argument("--size", required=True, type=int)
        parser.add_argument("--heldout", type=float, default=0.3, help="held-out fraction (default 0.3)")
        parser.add_argument("--overlap", type=int, default=1, help="different annotators per item (default 1)")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--annotator", action="append", default=[], help="username to assign (repeat)")
        parser.add_argument("--guidance", default="", help="the guideline annotators see (its version 1)")
        parser.add_argument("--metric", default="faithfulness", help="the judge metric validated (a score of the run)")
        parser.add_argument("--scale", choices=["binary", "ordinal"], default="binary")
        parser.add_argument("--scale-min", type=int, help="ordinal: the scale's lowest point (1)")
        parser.add_argument("--scale-max", type=int, help="ordinal: the scale's highest point (5)")
        parser.add_argument("--fail-at", type=float, help="ordinal: scores at or below this are the failure class")
        parser.add_argument("--pass-word", help="binary: the pass word (default: the metric's own, e.g. Relevant)")
        parser.add_argument("--fail-word", help="binary: the fail word (default: the metric's own)")
        parser.add_argument("--judge-pass-at", type=float, help="binary on a score: the judge passes at or above it")
        parser.add_argument(
            "--allocation",
            choices=["floor", "neyman"],
            default="floor",
            help="how tuning items are spread over slice x verdict: floor (the judge's rare verdict gets at least a "
            "quarter; default) or neyman (where the judge is least reliable; held-out items stay drawn at random)",
        )
        parser.add_argument(
            "--pass-disagreement",
            type=float,
            help="neyman: the share of answers the judge passed that people fail (default 0.15)",
        )
        parser.add_argument(
            "--fail-disagreement",
            type=float,
            help="neyman: the share of answers the judge failed that people pass (default 0.5)",
        )
        parser.add_argument(
            "--plan", action="store_true", help="create nothing: print what the campaign would sample and measure"
        )
        parser.add_argument(
            "--miss-rate",
            type=float,
            help="plan: the judge's assumed miss rate (default: its last validation, or 0.25)",
        )
        parser.add_argument("--false-fail-rate", type=float, help="plan: the judge's assumed false-fail rate (0.05)")
        parser.add_argument("--target", type=float, help="plan: half-width wanted on the miss rate (0.05: ± 5 points)")
        parser.add_argument("--json", action="store_true", help="with --plan: print the plan as JSON")

    def handle(self, *args, **options):
        if not options["plan"] and not options["name"]:
            raise CommandError("--name is required to create a campaign (or add --plan to only plan it)")
        try:
            run = run_by_ref(options["run"], evalset=options["evalset"])
            labels = label_set(
                metric=options["metric"],
                scale=options["scale"],
                scale_min=options["scale_min"],
                scale_max=options["scale_max"],
                fail_at=options["fail_at"],
                pass_word=options["pass_word"],
                fail_word=options["fail_word"],
                judge_pass_at=options["judge_pass_at"],
            )
            if options["plan"]:
                plan = plan_campaign(
                    run=run,
                    unit=options["unit"],
                    size=options["size"],
                    seed=options["seed"],
                    heldout_fraction=options["heldout"],
                    overlap=options["overlap"],
                    labels=labels,
                    **allocation_options(options),
                    **plan_assumptions(options),
                )
            else:
                campaign = campaign_create(
                    run=run,
                    name=options["name"],
                    unit=options["unit"],
                    size=options["size"],
                    heldout_fraction=options["heldout"],
                    overlap=options["overlap"],
                    seed=options["seed"],
                    guidance=options["guidance"],
                    annotators=options["annotator"],
                    labels=labels,
                    **allocation_options(options),
                )
        except UserFacingError as error:
            raise CommandError(str(error)) from None
        if options["plan"]:
            if options["json"]:
                self.stdout.write(json.dumps(plan.as_dict(), indent=2))
                return
            self.stdout.write(
                f"Plan (nothing created): {plan.total_sampled} of {plan.total_available} items of {run.name} ({run.version.label})"
            )
            self.stdout.write("\n".join(plan_lines(plan) + [""] + strata_lines(plan.strata)))
            return
        self.stdout.write(
            f"Created campaign {campaign.name}: {campaign.items.count()} items from {run.name} ({run.version.label})"
        )
        self.stdout.write("\n".join(strata_lines(campaign.strata)))
