"""export_disagreements CAMPAIGN --format jsonl|chat|csv|openai|dspy|langfuse: few-shot examples from the tuning split."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalcore.services.problems import UserFacingError

from ...services.exports import DISAGREEMENT_FORMATS, disagreements_export
from ..lookups import campaign_or_fail, verdict_set_or_fail


class Command(BaseCommand):
    help = "Export the items where the judge and people disagree (tuning split only), recorded and versioned."

    def add_arguments(self, parser):
        parser.add_argument("campaign")
        parser.add_argument("--format", choices=DISAGREEMENT_FORMATS, default="jsonl")
        parser.add_argument("--limit", type=int)
        parser.add_argument("--balanced", action="store_true", help="as many false passes as false fails")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument(
            "--verdicts", type=int, help="use an imported verdict set (a new judge config) instead of the run's judge"
        )
        parser.add_argument("--output", type=Path, help="write to this file (default: standard output)")

    def handle(self, *args, **options):
        campaign = campaign_or_fail(options["campaign"])
        verdict_set = verdict_set_or_fail(campaign, options["verdicts"])
        try:
            record = disagreements_export(
                campaign=campaign,
                fmt=options["format"],
                limit=options["limit"],
                balanced=options["balanced"],
                seed=options["seed"],
                verdict_set=verdict_set,
            )
        except UserFacingError as error:
            raise CommandError(str(error)) from None
        if options["output"]:
            options["output"].write_text(record.content, encoding="utf-8")
            self.stderr.write(
                f"export v{record.version}: {len(record.item_ids)} examples written to {options['output']}"
            )
        else:
            self.stdout.write(record.content, ending="")
            self.stderr.write(f"export v{record.version}: {len(record.item_ids)} examples")
