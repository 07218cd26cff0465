"""judge_bias CAMPAIGN --judge-config NAME [--probe NAME ...] [--bar 0.05]: run a bias battery on the campaign's
tuning items (the cost estimate first); --list-probes shows every probe's text; --add-probe NAME adds one."""

import json

from django.core.management.base import BaseCommand, CommandError

from evalcore.engine.multiplicity import CORRECTIONS
from evalcore.jobs.bias_kinds import BiasBatteryParams, bias_params_plan, request_bias_battery
from evalcore.judging.probes import FIELDS, OWNER_KINDS
from evalcore.management.cli import run_job_cli
from evalcore.services.judge_configs import judge_config_named
from evalcore.services.problems import UserFacingError

from ...api_bias import battery_data
from ...models import BiasBattery
from ...services.bias_battery import DEFAULT_ALPHA, DEFAULT_BAR, available_probes, bias_estimate, probe_add


class Command(BaseCommand):
    help = (
        "Run a bias battery for a judge config on a campaign's tuning items (never its held-out items): each probe's "
        "flip rate beyond the placebo with an interval clustered by item, Holm-corrected across probes. Prints the "
        "cost estimate first; calls already in the cache are free. Exit 4 when a probe blocks gating."
    )

    def add_arguments(self, parser):
        parser.add_argument("campaign", nargs="?")
        parser.add_argument("--judge-config", help="the runnable judge config's name (or #id, or hash prefix)")
        parser.add_argument("--probe", action="append", default=[], help="name or name@vN (repeat; default: all)")
        parser.add_argument("--bar", type=float, default=DEFAULT_BAR, help="flip rate beyond the placebo that blocks")
        parser.add_argument("--alpha", type=float, default=DEFAULT_ALPHA, help="family-wise level (default 0.05)")
        parser.add_argument("--correction", choices=CORRECTIONS, default="holm")
        parser.add_argument("--estimate", action="store_true", help="print the estimate and stop")
        parser.add_argument("--json", action="store_true", help="print the stored findings as JSON")
        parser.add_argument("--quiet", action="store_true", help="no progress bar")
        parser.add_argument("--list-probes", action="store_true", help="print every probe and its text, and stop")
        parser.add_argument("--add-probe", metavar="NAME", help="add an owner's probe (with --kind --field --text)")
        parser.add_argument("--kind", choices=OWNER_KINDS, help="for --add-probe")
        parser.add_argument("--field", choices=FIELDS, help="for --add-probe")
        parser.add_argument("--text", help="for --add-probe: what the probe adds")
        parser.add_argument("--describes", help="for --add-probe: in a verdict's words ('when the answer ...')")

    def handle(self, *args, **options):
        if options["list_probes"]:
            for spec in available_probes():
                self.stdout.write(f"{spec.label}: {spec.shown}\n    in a verdict: {spec.describes}")
            return
        if options["add_probe"]:
            return self._add(options)
        if not options["campaign"] or not options["judge_config"]:
            raise CommandError("give the campaign and --judge-config (or --list-probes, or --add-probe NAME)")
        try:
            config = judge_config_named(options["judge_config"])
            params = BiasBatteryParams(
                campaign=options["campaign"],
                judge_config=config.pk,
                probes=options["probe"],
                bar=options["bar"],
                alpha=options["alpha"],
                correction=options["correction"],
            )
            plan = bias_params_plan(params)
            estimate = bias_estimate(plan)
        except UserFacingError as error:
            raise CommandError(str(error)) from None
        self.stderr.write(f"probes: {', '.join(p.label for p in plan.probes)}")
        self.stderr.write(f"estimate: {estimate.line}\n  ({estimate.note})")
        if options["estimate"]:
            return
        result = run_job_cli(
            request_bias_battery, params=params, label="bias battery", stderr=self.stderr, quiet=options["quiet"]
        )
        battery = BiasBattery.objects.select_related("campaign", "judge_config").get(pk=result["battery"])
        if options["json"]:
            self.stdout.write(json.dumps(battery_data(battery), indent=2))
        else:
            self.stdout.write(result["message"])
            for finding in battery.findings:
                mark = "BLOCKS" if finding["blocks"] else ("inconclusive" if finding["inconclusive"] else "clear")
                self.stdout.write(f"  [{mark}] {finding['probe']} {finding['direction']}: {finding['words']}")
        if battery.blocks_gating:
            raise SystemExit(4)

    def _add(self, options):
        missing = [f"--{name}" for name in ("kind", "field", "text", "describes") if not options[name]]
        if missing:
            raise CommandError(f"--add-probe needs {', '.join(missing)}")
        try:
            probe = probe_add(
                name=options["add_probe"],
                kind=options["kind"],
                field=options["field"],
                text=options["text"],
                describes=options["describes"],
            )
        except UserFacingError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"probe {probe} ({probe.kind} to the {probe.field}): {probe.text!r}")
