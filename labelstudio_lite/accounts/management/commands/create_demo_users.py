"""Create the demo users (one eval owner, three annotators) and print how to log in."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from labelstudio_lite.accounts.services import user_save

DEMO_USERS = [
    ("owner", "owner-demo-pass", "owner", "Eval owner: runs, gates, campaigns, judge reports"),
    ("ann1", "ann1-demo-pass", "annotator", "Annotator"),
    ("ann2", "ann2-demo-pass", "annotator", "Annotator"),
    ("ann3", "ann3-demo-pass", "annotator", "Annotator"),
]


class Command(BaseCommand):
    help = "Create demo users (idempotent; existing users keep their role and password) and print the logins."

    def handle(self, *args, **options):
        existing = set(
            get_user_model().objects.filter(username__in=[u[0] for u in DEMO_USERS]).values_list("username", flat=True)
        )
        lines = []
        for username, password, role, what in DEMO_USERS:
            if username not in existing:  # the same service as create_user and the People page
                user_save(username=username, role=role, password=password)
            note = " (existing user; password unchanged)" if username in existing else ""
            lines.append(f"  {username:<7} / {password:<16} {what}{note}")
        self.stdout.write("Demo logins:\n" + "\n".join(lines))
