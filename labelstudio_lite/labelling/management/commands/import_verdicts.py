"""import_verdicts FILE --campaign NAME --judge-config FILE: a new judge config's verdicts on the campaign's items."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalcore.management.cli import run_job_cli
from evalcore.models import Job

from ...models import Campaign


class Command(BaseCommand):
    help = "Import verdicts of a new judge config (question_id, claim_index, supported, rationale) for re-measurement."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--judge-config", type=Path, required=True)
        parser.add_argument("--quiet", action="store_true")

    def handle(self, *args, **options):
        if not options["file"].is_file():
            raise CommandError(f"{options['file']}: no such file")
        if not Campaign.objects.filter(name=options["campaign"]).exists():
            raise CommandError(f"there is no campaign named {options['campaign']!r}")
        try:
            config = json.loads(options["judge_config"].read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise CommandError(f"{options['judge_config']}: cannot read the judge config: {error}") from None
        result = run_job_cli(
            kind=Job.Kind.IMPORT_VERDICTS,
            params={"campaign": options["campaign"], "path": str(options["file"].resolve()), "display_name": options["file"].name,
                    "judge_config": config},
            label=f"import {options['file'].name}", stderr=self.stderr, quiet=options["quiet"],
        )
        self.stdout.write(result["message"])
        self.stdout.write(f"verdict set: {result['verdict_set']}")
