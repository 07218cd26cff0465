"""cleanup_uploads [--older-than HOURS] [--dry-run]: delete uploads that no job will read any more."""

from datetime import timedelta

from django.core.management.base import BaseCommand

from ...models import Job
from ...services.uploads import is_stored, uploads_cleanup


class Command(BaseCommand):
    help = (
        "Delete stored uploads older than --older-than hours that no queued or running job reads (left by a "
        "process that was killed), and upload temporary files left by killed requests. Run it daily (cron)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--older-than", type=float, default=24.0, help="hours (default 24)")
        parser.add_argument("--dry-run", action="store_true", help="list what would be deleted; delete nothing")

    def handle(self, *args, **options):
        in_use = {
            value
            for params in Job.objects.filter(status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).values_list(
                "params", flat=True
            )
            for value in (params or {}).values()
            if is_stored(value)
        }
        deleted = uploads_cleanup(
            older_than=timedelta(hours=options["older_than"]), in_use=in_use, dry_run=options["dry_run"]
        )
        for name in deleted:
            self.stdout.write(("would delete " if options["dry_run"] else "deleted ") + name)
        self.stdout.write(f"{len(deleted)} upload(s) {'to delete' if options['dry_run'] else 'deleted'}.")
