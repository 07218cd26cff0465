"""create_campaign --run RUN --name NAME --unit answer|claim --size N: a seeded, stratified labelling sample."""

from django.core.management.base import BaseCommand, CommandError

from evalcore.selectors import run_by_ref
from evalcore.services.problems import UserFacingError

from ...services.campaigns import campaign_create


class Command(BaseCommand):
    help = "Create a labelling campaign from a run (a size at or above the run's item count takes every item)."

    def add_arguments(self, parser):
        parser.add_argument("--run", required=True, help="run name (or #id)")
        parser.add_argument("--evalset", help="NAME or NAME@VERSION when run names repeat")
        parser.add_argument("--name", required=True)
        parser.add_argument("--unit", required=True, choices=["answer", "claim"])
        parser.add_argument("--size", required=True, type=int)
        parser.add_argument("--heldout", type=float, default=0.3, help="held-out fraction (default 0.3)")
        parser.add_argument("--overlap", type=int, default=1, help="different annotators per item (default 1)")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--annotator", action="append", default=[], help="username to assign (repeat)")
        parser.add_argument("--guidance", default="")

    def handle(self, *args, **options):
        try:
            run = run_by_ref(options["run"], evalset=options["evalset"])
            campaign = campaign_create(
                run=run,
                name=options["name"],
                unit=options["unit"],
                size=options["size"],
                heldout_fraction=options["heldout"],
                overlap=options["overlap"],
                seed=options["seed"],
                guidance=options["guidance"],
                annotators=options["annotator"],
            )
        except UserFacingError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"Created campaign {campaign.name}: {campaign.items.count()} items from {run.name} ({run.version.label})"
        )
        self.stdout.write(f"{'stratum':<40} {'available':>9} {'sampled':>8} {'tuning':>7} {'held out':>9}")
        for s in campaign.strata:
            self.stdout.write(
                f"{s['stratum']:<40} {s['available']:>9} {s['sampled']:>8} {s['tuning']:>7} {s['heldout']:>9}"
            )
