"""try_prompt CAMPAIGN --judge-config BASE --name NEW [--export V] [--prompt-file FILE]: try a tuned judge prompt
on the campaign's held-out items and open the re-measurement."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalcore.jobs.labelling_kinds import TryPromptParams, request_try_prompt
from evalcore.management.cli import run_job_cli
from evalcore.services.judge_configs import judge_config_named
from evalcore.services.problems import UserFacingError


class Command(BaseCommand):
    help = (
        "Create a tuned judge config (a runnable config with an edited verdict prompt and few-shot examples from a "
        "disagreement export of the tuning split), judge the campaign's held-out items with it, and open the "
        "re-measurement. Refused once a re-measurement of the held-out split was looked at."
    )

    def add_arguments(self, parser):
        parser.add_argument("campaign")
        parser.add_argument("--judge-config", required=True, help="the runnable config to start from")
        parser.add_argument("--name", required=True, help="the new config's name")
        parser.add_argument("--export", type=int, help="disagreement export version: the few-shot examples")
        parser.add_argument("--export-campaign", help="the export's campaign (default: CAMPAIGN)")
        parser.add_argument("--prompt-file", type=Path, help="the edited verdict prompt (a template)")
        parser.add_argument("--claims", choices=["keep", "split"], default="keep")
        parser.add_argument("--quiet", action="store_true")

    def handle(self, *args, **options):
        try:
            base = judge_config_named(options["judge_config"])
            prompt = options["prompt_file"].read_text(encoding="utf-8") if options["prompt_file"] else None
        except OSError as error:
            raise CommandError(f"{options['prompt_file']}: {error.strerror}") from None
        except UserFacingError as error:
            raise CommandError(str(error)) from None
        params = TryPromptParams(
            campaign=options["campaign"],
            base_config=base.pk,
            name=options["name"],
            export=options["export"],
            export_campaign=options["export_campaign"],
            prompt=prompt,
            claims=options["claims"],
        )
        result = run_job_cli(
            request_try_prompt, params=params, label="try prompt", stderr=self.stderr, quiet=options["quiet"]
        )
        self.stdout.write(result["message"])
        self.stdout.write(f"re-measurement: {result['url']}")
