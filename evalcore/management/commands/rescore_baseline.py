"""rescore_baseline --base RUN --candidate RUN: re-score the older run with the newer run's judge, then gate.

Exit codes as gate's: 0 pass, 3 review, 4 block, 1 error.
"""

import json
import sys

from django.core.management.base import BaseCommand

from ...jobs.kinds import RescoreParams, request_rescore_baseline
from ...models import Comparison
from ...services.comparisons import comparison_as_dict
from ...services.judge_runs import CLAIM_MODES
from ..cli import base_and_candidate, run_job_cli
from .gate import EXIT, render_table


class Command(BaseCommand):
    help = (
        "When two runs were scored by different judge configs, judge the older one again with the newer run's "
        "config (a new run; cached calls are free) and compare it with the other run."
    )

    def add_arguments(self, parser):
        parser.add_argument("--base", required=True, help="baseline run name (or #id)")
        parser.add_argument("--candidate", required=True, help="candidate run name (or #id)")
        parser.add_argument("--evalset", help="NAME or NAME@VERSION, when run names repeat")
        parser.add_argument("--claims", choices=CLAIM_MODES, default="keep")
        parser.add_argument("--json", action="store_true", help="print the comparison as JSON")

    def handle(self, *args, **options):
        base, candidate = base_and_candidate(options)
        params = RescoreParams(base=base.pk, candidate=candidate.pk, claims=options["claims"])
        result = run_job_cli(
            request_rescore_baseline, params=params, label="re-score", stderr=self.stderr, quiet=options["json"]
        )
        self.stderr.write(result["message"])
        comparison = Comparison.objects.select_related("base__version__eval_set", "candidate").get(
            pk=result["comparison_id"]
        )
        data = comparison_as_dict(comparison)
        self.stdout.write(json.dumps(data, indent=2) if options["json"] else render_table(data))
        if EXIT[comparison.overall]:
            sys.exit(EXIT[comparison.overall])
