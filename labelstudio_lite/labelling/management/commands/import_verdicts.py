"""import_verdicts FILE --campaign NAME --judge-config FILE: a new judge config's verdicts on the campaign's items."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalcore.management.cli import existing_file, run_import_cli

from ...jobs import VerdictImportParams, request_verdicts_import


class Command(BaseCommand):
    help = "Import verdicts of a new judge config (question_id, claim_index, supported, rationale) for re-measurement."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--judge-config", type=Path, required=True)
        parser.add_argument("--quiet", action="store_true")

    def handle(self, *args, **options):
        path: Path = options["file"]
        file = existing_file(path)
        try:
            config = json.loads(options["judge_config"].read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise CommandError(f"{options['judge_config']}: cannot read the judge config: {error}") from None
        params = VerdictImportParams(
            campaign=options["campaign"], path=file, display_name=path.name, judge_config=config
        )
        result = run_import_cli(self, request_verdicts_import, params=params, path=path, quiet=options["quiet"])
        self.stdout.write(f"verdict set: {result['verdict_set']}")
