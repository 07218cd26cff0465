"""plan labels|questions: the planner with no data yet, every assumption shown (JSON with --json).

plan labels --size 240 --failure-share 0.15 [--miss-rate 0.25] [--target 0.05] ...
plan questions --discordance 0.10 [--change 0] [--margin 0.02] [--available 600] ...
"""

import json

from django.core.management.base import BaseCommand, CommandError

from ...services.planning import (
    DEFAULT_FALSE_FAIL_RATE,
    DEFAULT_MISS_RATE,
    DEFAULT_TARGET,
    STATISTIC_WORDS,
    plan_labels,
    plan_questions,
)
from ...services.problems import UserFacingError


class Command(BaseCommand):
    help = "Plan a labelling campaign (labels) or a paired comparison (questions) from typed-in assumptions."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="what", required=True, metavar="labels|questions")
        labels = sub.add_parser("labels", help="labels a campaign needs for a target half-width")
        labels.add_argument("--size", type=int, default=240, help="items to label (default 240)")
        labels.add_argument(
            "--failure-share", type=float, required=True, help="share of items people would fail (0.15 is 15 %%)"
        )
        labels.add_argument("--miss-rate", type=float, default=DEFAULT_MISS_RATE, help="the judge's assumed miss rate")
        labels.add_argument(
            "--false-fail-rate", type=float, default=DEFAULT_FALSE_FAIL_RATE, help="the judge's assumed false-fail rate"
        )
        labels.add_argument("--population", type=int, help="items in the run (default: a large run)")
        labels.add_argument("--heldout", type=float, default=0.3, help="held-out fraction (default 0.3)")
        labels.add_argument("--overlap", type=int, default=1, help="different annotators per item (default 1)")
        labels.add_argument("--target", type=float, default=DEFAULT_TARGET, help="half-width wanted (0.05: ± 5 points)")
        labels.add_argument("--statistic", choices=list(STATISTIC_WORDS), default="miss_rate", help="the target's")
        labels.add_argument("--json", action="store_true", help="print the plan as JSON")
        questions = sub.add_parser("questions", help="paired questions a comparison needs")
        questions.add_argument(
            "--change", type=float, default=0.0, help="true change, candidate - baseline (default 0)"
        )
        questions.add_argument("--margin", type=float, default=0.02, help="the gate's margin (default 0.02)")
        spread = questions.add_mutually_exclusive_group(required=True)
        spread.add_argument("--discordance", type=float, help="pass/fail metrics: share of questions that flip")
        spread.add_argument("--sd", type=float, help="graded metrics: sd of the per-question differences")
        questions.add_argument("--power", type=float, default=0.8, help="default 0.8")
        questions.add_argument("--available", type=int, help="questions in the eval set")
        questions.add_argument("--json", action="store_true", help="print the plan as JSON")

    def handle(self, *args, **options):
        try:
            if options["what"] == "labels":
                result = plan_labels(
                    size=options["size"],
                    failure_share=options["failure_share"],
                    miss_rate=options["miss_rate"],
                    false_fail_rate=options["false_fail_rate"],
                    population=options["population"],
                    heldout_fraction=options["heldout"],
                    overlap=options["overlap"],
                    target=options["target"],
                    statistic=options["statistic"],
                )
                lines = [f"{result.summary}.", f"{result.heldout[0].upper()}{result.heldout[1:]}."]
            else:
                result = plan_questions(
                    change=options["change"],
                    margin=options["margin"],
                    kind="graded" if options["sd"] is not None else "pass_fail",
                    discordance=options["discordance"],
                    sd=options["sd"],
                    power=options["power"],
                    available=options["available"],
                )
                lines = [f"{result.summary[0].upper()}{result.summary[1:]}."]
                if result.available_sentence:
                    lines.append(f"{result.available_sentence[0].upper()}{result.available_sentence[1:]}.")
        except UserFacingError as error:
            raise CommandError(str(error)) from None
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict(), indent=2))
            return
        notes = getattr(getattr(result, "plan", None), "notes", ())
        lines += [f"note: {note}" for note in notes]
        lines.append(f"assuming {result.assumptions}")
        self.stdout.write("\n".join(lines))
