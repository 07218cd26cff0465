"""export_labels CAMPAIGN --format csv|jsonl|label-studio [--output FILE] [--label-config FILE]: every label of a
campaign, recorded as an export."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalcore.services.problems import UserFacingError

from ...services.exports import LABEL_FORMATS, labels_export
from ...services.label_formats import label_studio_config
from ..lookups import campaign_or_fail


class Command(BaseCommand):
    help = (
        "Export every label of a campaign, held-out items included (the export is recorded: the judge report "
        "warns that held-out labels left). label-studio writes the task list Label Studio's import takes."
    )

    def add_arguments(self, parser):
        parser.add_argument("campaign")
        parser.add_argument("--format", choices=LABEL_FORMATS, default="csv")
        parser.add_argument("--output", type=Path, help="write to this file (default: standard output)")
        parser.add_argument(
            "--label-config",
            type=Path,
            help="also write the Label Studio labelling config (XML) the exported tasks fit (with --format label-studio)",
        )

    def handle(self, *args, **options):
        campaign = campaign_or_fail(options["campaign"])
        if options["label_config"] and options["format"] != "label-studio":
            raise CommandError("--label-config goes with --format label-studio")
        try:
            record = labels_export(campaign=campaign, fmt=options["format"])
        except UserFacingError as error:
            raise CommandError(str(error)) from None
        if options["label_config"]:
            options["label_config"].write_text(label_studio_config(campaign), encoding="utf-8")
        if options["output"]:
            options["output"].write_text(record.content, encoding="utf-8")
            self.stderr.write(
                f"export v{record.version}: labels of {len(record.item_ids)} items written to {options['output']}"
            )
        else:
            self.stdout.write(record.content, ending="")
            self.stderr.write(f"export v{record.version}: labels of {len(record.item_ids)} items")
