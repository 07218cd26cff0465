"""new_guideline CAMPAIGN (--text TEXT | --file PATH) [--list]: write the guideline's next version, or list them."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalcore.services.problems import UserFacingError

from ...services.campaigns import campaign_new_guideline
from ..lookups import campaign_or_fail


class Command(BaseCommand):
    help = (
        "Write a campaign's next guideline version (annotators see it from now on, their labels record it, and a "
        "certificate measured under an older version reads stale); --list prints the versions."
    )

    def add_arguments(self, parser):
        parser.add_argument("campaign")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--text", help="the new guideline's text")
        source.add_argument("--file", type=Path, help="a UTF-8 text file holding it")
        source.add_argument("--list", action="store_true", help="print the versions, newest first; write nothing")

    def handle(self, *args, **options):
        campaign = campaign_or_fail(options["campaign"])
        if options["list"]:
            for guideline in campaign.guidelines.order_by("-version"):
                by = guideline.created_by.username if guideline.created_by else "CLI"
                self.stdout.write(
                    f"v{guideline.version} ({by}, {guideline.created_at:%Y-%m-%d %H:%M}): {guideline.text}"
                )
            return
        text = options["text"]
        if options["file"] is not None:
            try:
                text = options["file"].read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise CommandError(f"{options['file']}: cannot read it as UTF-8 text ({error})") from None
        try:
            guideline = campaign_new_guideline(campaign=campaign, text=text)
        except UserFacingError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"Campaign {campaign.name}: guideline v{guideline.version} written; labels given from now on record it."
        )
