"""import_labels FILE --campaign NAME: labels made elsewhere (CSV or JSON Lines), atomic and idempotent."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalcore.management.cli import run_job_cli

from ...jobs import LabelImportParams, request_labels_import


class Command(BaseCommand):
    help = "Import labels: question_id, claim_index (claim campaigns, from 0), label (supported/unsupported/cant_tell), annotator, rationale."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--quiet", action="store_true")

    def handle(self, *args, **options):
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        params = LabelImportParams(campaign=options["campaign"], path=str(path.resolve()), display_name=path.name)
        result = run_job_cli(request_labels_import, params=params, label=f"import {path.name}", stderr=self.stderr, quiet=options["quiet"])
        self.stdout.write(result["message"])
