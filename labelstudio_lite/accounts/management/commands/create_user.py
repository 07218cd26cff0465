"""create_user NAME --role owner|annotator [--password-stdin | --link]: create an eval owner or an annotator (idempotent)."""

import sys

from django.core.management.base import BaseCommand, CommandError

from evalcore.services.problems import UserFacingError
from labelstudio_lite.accounts.models import AccessLink
from labelstudio_lite.accounts.services import ROLES, access_link_create, user_save


class Command(BaseCommand):
    help = (
        "Create a user with a role, or bring an existing one to it (running it again changes nothing). "
        "Without --password-stdin a new user gets a generated password, printed once (with --link, a one-time "
        "link to set their own instead); an existing one keeps theirs. The People page does the same in the browser."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=sorted(ROLES), help="owner (eval owner) or annotator")
        parser.add_argument("--email", default="")
        how = parser.add_mutually_exclusive_group()
        how.add_argument(
            "--password-stdin", action="store_true", help="read the password from the first line of standard input"
        )
        how.add_argument(
            "--link",
            action="store_true",
            help="print a one-time link (valid ACCESS_LINK_HOURS) with which a new user sets their own password",
        )

    def handle(self, *args, **options):
        username, role = options["username"], options["role"]
        password = None
        if options["password_stdin"]:
            password = sys.stdin.readline().rstrip("\r\n")
            if not password:
                raise CommandError("--password-stdin: standard input held no password (one line expected)")
        try:
            saved = user_save(
                username=username,
                role=role,
                password=password,
                email=options["email"],
                generate_password=not options["link"],
            )
            link = (
                access_link_create(user=saved.user, purpose=AccessLink.Purpose.INVITE)
                if options["link"] and saved.created
                else None
            )
        except UserFacingError as error:
            raise CommandError(str(error)) from None
        if saved.created:
            self.stdout.write(f"Created {role} {username!r}.")
        elif saved.role_changed:
            self.stdout.write(f"User {username!r} is now an {role}.")
        else:
            self.stdout.write(f"User {username!r} already exists as an {role}; nothing changed.")
        if saved.password is not None:
            self.stdout.write(f"Password (shown once): {saved.password}")
        elif link is not None:
            self.stdout.write(
                f"One-time link (shown once; prefix it with this site's address): {link.path}\n"
                f"It works once, for {link.link.expires_at - link.link.created_at}, to set their password."
            )
        elif saved.password_set and not saved.created:
            self.stdout.write("Password changed.")
