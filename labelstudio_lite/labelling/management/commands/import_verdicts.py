"""import_verdicts FILE --campaign NAME --judge-config FILE: a new judge config's verdicts on the campaign's items."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalcore.jobs.labelling_kinds import VerdictImportParams, request_verdicts_import
from evalcore.management.cli import existing_file, run_import_cli
from evalcore.services.problems import UserFacingError
from evalcore.services.readers import read_json_object_file


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
            config = read_json_object_file(options["judge_config"], "judge config")
        except UserFacingError as error:
            raise CommandError(str(error)) from None
        params = VerdictImportParams(
            campaign=options["campaign"], path=file, display_name=path.name, judge_config=config
        )
        result = run_import_cli(self, request_verdicts_import, params=params, path=path, quiet=options["quiet"])
        self.stdout.write(f"verdict set: {result['verdict_set']}")
