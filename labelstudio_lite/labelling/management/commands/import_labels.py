"""import_labels FILE --campaign NAME: labels made elsewhere (CSV or JSON Lines), atomic and idempotent."""

from pathlib import Path

from django.core.management.base import BaseCommand

from evalcore.management.cli import existing_file, run_import_cli

from ...jobs import LabelImportParams, request_labels_import


class Command(BaseCommand):
    help = "Import labels: question_id, claim_index (claim campaigns, from 0), label (supported/unsupported/cant_tell), annotator, rationale."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--quiet", action="store_true")

    def handle(self, *args, **options):
        path: Path = options["file"]
        params = LabelImportParams(campaign=options["campaign"], path=existing_file(path), display_name=path.name)
        run_import_cli(self, request_labels_import, params=params, path=path, quiet=options["quiet"])
