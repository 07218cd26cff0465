"""judge_report CAMPAIGN [--json]: can this judge be trusted on this metric?"""

import json

from django.core.management.base import BaseCommand

from ...services.judge_report import judge_report
from ..lookups import campaign_or_fail, verdict_set_or_fail


def _pct(value):
    return "—" if value is None else f"{100 * value:.0f} %"


class Command(BaseCommand):
    help = "Print the judge error report of a campaign (people's final labels against the judge's verdicts)."

    def add_arguments(self, parser):
        parser.add_argument("campaign")
        parser.add_argument("--verdicts", type=int, help="id of an imported verdict set (a new judge config) to report on")
        parser.add_argument("--json", action="store_true", help="the report as JSON (the same as the API and the page)")

    def handle(self, *args, **options):
        campaign = campaign_or_fail(options["campaign"])
        verdict_set = verdict_set_or_fail(campaign, options["verdicts"])
        report = judge_report(campaign, verdict_set=verdict_set)
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2, default=str))
            return
        o = report["overall"]
        judge = report["judge"]
        self.stdout.write(f"Judge {judge['model']}-{judge['model_version']} · prompt {str(judge['prompt_hash'])[:6]}… · {report['metric']} · "
                          f"{o.get('n', 0)} labelled {report['unit_word']}")
        self.stdout.write(report["verdict"]["line"])
        for warning in report["warnings"]:
            self.stdout.write(f"warning: {warning}")
        if not o.get("n"):
            return
        self.stdout.write(f"agreement {o['agreement']:.3f} · kappa {o['kappa'] if o['kappa'] is None else round(o['kappa'], 3)} "
                          f"({_fmt(o['kappa_low'])}–{_fmt(o['kappa_high'])}) · {o['miss_sentence']} · {o['prevalence_sentence']}")
        c = o["confusion"]
        self.stdout.write(f"{'':<20}{'judge supported':>17}{'judge unsupported':>19}")
        self.stdout.write(f"{'people supported':<20}{c['people_supported']['judge_supported']:>17}{c['people_supported']['judge_unsupported']:>19}")
        self.stdout.write(f"{'people unsupported':<20}{c['people_unsupported']['judge_supported']:>17}{c['people_unsupported']['judge_unsupported']:>19}")
        self.stdout.write(f"\n{'slice':<16}{'n':>5}{'kappa':>8}{'  (95% CI)':<16}{'missed':>10}{'miss rate':>11}")
        for s in report["slices"]:
            self.stdout.write(f"{s['slice']:<16}{s['n']:>5}{_fmt(s['kappa']):>8}  ({_fmt(s['kappa_low'])}–{_fmt(s['kappa_high'])})   "
                              f"{s['missed']:>4}/{s['failures']:<4}{_pct(s['miss_rate']):>9}")
        if report["corrected"]:
            r = report["corrected"]
            self.stdout.write(f"\nJudge pass rate on the run {_pct(r['raw'])} · corrected for the judge's errors {_pct(r['corrected'])} "
                              f"({_pct(r['low'])}–{_pct(r['high'])})")


def _fmt(value):
    return "—" if value is None else f"{value:.2f}"
