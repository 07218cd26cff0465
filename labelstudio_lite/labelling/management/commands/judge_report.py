"""judge_report CAMPAIGN [--json | --format html|json --output FILE]: can this judge be trusted on this metric?"""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ...services.judge_report import judge_report
from ...services.judge_stats import pct
from ...services.published_report import PUBLISH_FORMATS, judge_report_publish
from ..lookups import campaign_or_fail, verdict_set_or_fail


class Command(BaseCommand):
    help = "Print the judge error report of a campaign (people's final labels against the judge's verdicts)."

    def add_arguments(self, parser):
        parser.add_argument("campaign")
        parser.add_argument(
            "--verdicts", type=int, help="id of an imported verdict set (a new judge config) to report on"
        )
        parser.add_argument("--json", action="store_true", help="the report as JSON (the same as the API and the page)")
        parser.add_argument(
            "--format",
            choices=PUBLISH_FORMATS,
            help="the portable report for publishing, with the labels behind it: one self-contained HTML page or "
            "JSON (recorded as an export, since it holds the held-out labels)",
        )
        parser.add_argument("--output", type=Path, help="with --format: write to this file (default: standard output)")

    def handle(self, *args, **options):
        campaign = campaign_or_fail(options["campaign"])
        verdict_set = verdict_set_or_fail(campaign, options["verdicts"])
        if options["format"]:
            self._publish(campaign, verdict_set, options)
            return
        if options["output"]:
            raise CommandError("--output goes with --format html|json (the portable report)")
        report = judge_report(campaign, verdict_set=verdict_set)
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2, default=str))
            return
        o, judge = report.overall, report.judge
        self.stdout.write(
            f"Judge {judge.model}-{judge.model_version} · prompt {str(judge.prompt_hash)[:6]}… · {report.metric} · "
            f"{o.n} labelled {report.unit_word}"
        )
        self.stdout.write(report.verdict.line)
        if report.certificate:
            certificate = report.certificate
            self.stdout.write(f"certificate: {certificate['state']}: {'; '.join(certificate['reasons'])}")
            if report.stale:
                self.stdout.write(f"stale: {report.stale}")
        for warning in report.warnings:
            self.stdout.write(f"warning: {warning}")
        if report.more_labels:
            self.stdout.write(f"plan: {report.more_labels}")
        if not o.n:
            return
        self.stdout.write(
            f"agreement {o.agreement:.3f} · kappa {o.kappa if o.kappa is None else round(o.kappa, 3)} "
            f"({_fmt(o.kappa_low)}–{_fmt(o.kappa_high)}) · {o.miss_sentence} · {o.prevalence_sentence}"
        )
        self._confusion(campaign, o.confusion)
        self.stdout.write(f"\n{'slice':<16}{'n':>5}{'kappa':>8}{'  (95% CI)':<16}{'missed':>10}{'miss rate':>11}")
        for s in report.slices:
            st = s.stats
            self.stdout.write(
                f"{s.slice:<16}{st.n:>5}{_fmt(st.kappa):>8}  ({_fmt(st.kappa_low)}–{_fmt(st.kappa_high)})   "
                f"{st.missed:>4}/{st.failures:<4}{pct(st.miss_rate):>9}"
            )
        if report.corrected:
            r = report.corrected
            self.stdout.write(
                f"\nJudge pass rate on the run {pct(r.raw)} · corrected for the judge's errors {pct(r.corrected)} "
                f"({pct(r.low)}–{pct(r.high)})"
            )

    def _confusion(self, campaign, c) -> None:
        """The confusion table in the campaign's words ("supported" / "unsupported", "3–5" / "1–2")."""
        if campaign.ordinal:
            passed, failed = f"above {campaign.fail_at:g}", f"{campaign.scale_min}–{campaign.fail_at:g}"
        else:
            passed, failed = campaign.pass_word.lower(), campaign.fail_word.lower()
        left = max(20, len(f"people {failed}") + 2)
        first, second = max(17, len(f"judge {passed}") + 2), max(19, len(f"judge {failed}") + 2)
        self.stdout.write(f"{'':<{left}}{'judge ' + passed:>{first}}{'judge ' + failed:>{second}}")
        for word, row in ((passed, c.people_supported), (failed, c.people_unsupported)):
            self.stdout.write(
                f"{'people ' + word:<{left}}{row.judge_supported:>{first}}{row.judge_unsupported:>{second}}"
            )

    def _publish(self, campaign, verdict_set, options):
        if options["json"]:
            raise CommandError("--json prints the report; --format json publishes it with its labels: give one")
        record = judge_report_publish(campaign=campaign, fmt=options["format"], verdict_set=verdict_set)
        where = ""
        if options["output"]:
            options["output"].write_text(record.content, encoding="utf-8")
            where = f" written to {options['output']}"
        else:
            self.stdout.write(record.content, ending="")
        self.stderr.write(
            f"export v{record.version}: the judge report with the labels of {len(record.item_ids)} items "
            f"({record.heldout_items} held out){where}"
        )


def _fmt(value):
    return "—" if value is None else f"{value:.2f}"
