"""create_user NAME --role owner|annotator [--password-stdin]: create an eval owner or an annotator (idempotent)."""

import secrets
import sys

from django.core.management.base import BaseCommand, CommandError

from evalcore.services.problems import UserFacingError
from labelstudio_lite.accounts.services import ROLES, user_save


class Command(BaseCommand):
    help = (
        "Create a user with a role, or bring an existing one to it (running it again changes nothing). "
        "Without --password-stdin a new user gets a generated password, printed once; an existing one keeps theirs."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=sorted(ROLES), help="owner (eval owner) or annotator")
        parser.add_argument("--email", default="")
        parser.add_argument(
            "--password-stdin", action="store_true", help="read the password from the first line of standard input"
        )

    def handle(self, *args, **options):
        username, role = options["username"], options["role"]
        password = None
        generated = False
        if options["password_stdin"]:
            password = sys.stdin.readline().rstrip("\r\n")
            if not password:
                raise CommandError("--password-stdin: standard input held no password (one line expected)")
        try:
            saved = user_save(username=username, role=role, password=password, email=options["email"])
            if saved.created and password is None:
                password, generated = secrets.token_urlsafe(12), True
                saved = user_save(username=username, role=role, password=password)
        except UserFacingError as error:
            raise CommandError(str(error)) from None
        if saved.created:
            self.stdout.write(f"Created {role} {username!r}.")
        elif saved.role_changed:
            self.stdout.write(f"User {username!r} is now an {role}.")
        else:
            self.stdout.write(f"User {username!r} already exists as an {role}; nothing changed.")
        if generated:
            self.stdout.write(f"Password (shown once): {password}")
        elif saved.password_set and not saved.created:
            self.stdout.write("Password changed.")
