"""serve_demo ADDR:PORT: migrate, load the demo and serve it, all in one process (what ``./dev run`` does).

One process instead of three (migrate, load_demo, runserver and its reloader's child) starts the app
once: on a first run, most of the wait before the page answers is Python starting Django again.
"""

from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Apply migrations, load the demo data (idempotent) and serve the app with runserver, in one process."

    def add_arguments(self, parser):
        parser.add_argument("addrport", help="HOST:PORT to serve on")
        parser.add_argument(
            "--reload", action="store_true", help="restart when the code changes (runserver's reloader)"
        )

    def handle(self, *args, **options):
        addrport = options["addrport"]
        call_command("migrate", interactive=False, verbosity=0, stdout=self.stdout)
        call_command("load_demo", url=f"http://{addrport}", stdout=self.stdout)
        self.stdout.write(f"\nServing labelstudio-lite on http://{addrport} (Ctrl+C to stop). Open it and log in.")
        self.stdout.flush()
        call_command("runserver", addrport, use_reloader=options["reload"], skip_checks=True)
