"""Create the demo users (one eval owner, three annotators) and print how to log in."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

DEMO_USERS = [
    ("owner", "owner-demo-pass", "eval_owner", "Eval owner: runs, gates, campaigns, judge reports"),
    ("ann1", "ann1-demo-pass", "annotator", "Annotator"),
    ("ann2", "ann2-demo-pass", "annotator", "Annotator"),
    ("ann3", "ann3-demo-pass", "annotator", "Annotator"),
]


class Command(BaseCommand):
    help = "Create demo users (idempotent; existing users keep their passwords) and print the logins."

    def handle(self, *args, **options):
        User = get_user_model()
        lines = []
        for username, password, role, what in DEMO_USERS:
            user, created = User.objects.get_or_create(username=username, defaults={"role": role})
            if created:
                user.set_password(password)
                user.save(update_fields=["password"])
            note = "" if created else " (existing user; password unchanged)"
            lines.append(f"  {username:<7} / {password:<16} {what}{note}")
        self.stdout.write("Demo logins:\n" + "\n".join(lines))
