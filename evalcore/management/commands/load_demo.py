"""Load the demo: users, and (idempotently) the demo eval set and runs."""

from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create the demo users and demo data (safe to run twice) and print how to log in."

    def handle(self, *args, **options):
        call_command("create_demo_users", stdout=self.stdout)
