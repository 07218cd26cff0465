"""judge_run --run NAME --judge-config NAME [--claims keep|split]: score a run with a judge, as a new run."""

from django.core.management.base import BaseCommand, CommandError

from ...jobs.kinds import JudgeRunParams, request_judge_run
from ...selectors import run_by_ref
from ...services.judge_configs import judge_config_named
from ...services.judge_runs import CLAIM_MODES, judge_run_estimate
from ...services.problems import UserFacingError
from ..cli import run_job_cli


class Command(BaseCommand):
    help = (
        "Judge every row of a run with a runnable judge config and store the result as a new run derived from it. "
        "Prints the cost estimate first; calls already in the cache are free."
    )

    def add_arguments(self, parser):
        parser.add_argument("--run", required=True, help="the run's name (or #id)")
        parser.add_argument("--evalset", help="NAME or NAME@VERSION, when run names repeat")
        parser.add_argument("--judge-config", required=True, help="the judge config's name (or #id, or hash prefix)")
        parser.add_argument(
            "--claims", choices=CLAIM_MODES, default="keep", help="keep the rows' claims (default) or split answers"
        )
        parser.add_argument("--name", help="the new run's name (default RUN-by-CONFIG)")
        parser.add_argument("--estimate", action="store_true", help="print the estimate and stop")
        parser.add_argument("--quiet", action="store_true", help="no progress bar")

    def handle(self, *args, **options):
        try:
            run = run_by_ref(options["run"], evalset=options["evalset"])
            config = judge_config_named(options["judge_config"])
            if config.runnable:
                estimate = judge_run_estimate(run=run, config=config, claims=options["claims"])
                self.stderr.write(f"estimate: {estimate.line}\n  ({estimate.note})")
        except UserFacingError as error:
            raise CommandError(str(error)) from None
        if options["estimate"]:
            return
        params = JudgeRunParams(run=run.pk, judge_config=config.pk, claims=options["claims"], name=options["name"])
        result = run_job_cli(
            request_judge_run, params=params, label="judge", stderr=self.stderr, quiet=options["quiet"]
        )
        self.stdout.write(result["message"])
