"""api_token create USER --name NAME | list [USER] | revoke PREFIX: API tokens for scripts and CI, stored hashed."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from evalcore.services.problems import UserFacingError
from labelstudio_lite.accounts.models import ApiToken
from labelstudio_lite.accounts.tokens import token_create, token_revoke


class Command(BaseCommand):
    help = (
        "Make, list or revoke API tokens (sent as 'Authorization: Token KEY'). A key is printed once, when made; "
        "only its digest is stored. Each person does the same on their Access page (/account/tokens/)."
    )

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="make a token and print its key once")
        create.add_argument("username")
        create.add_argument("--name", required=True, help="what will use it (a CI job, a notebook)")
        listing = actions.add_parser("list", help="tokens (never their keys), newest first")
        listing.add_argument("username", nargs="?")
        revoke = actions.add_parser("revoke", help="refuse the token from now on")
        revoke.add_argument("prefix", help="the token's first characters, as listed (lsl_...)")

    def handle(self, *args, **options):
        action = options["action"]
        if action == "create":
            user = self._user(options["username"])
            try:
                made = token_create(user=user, name=options["name"])
            except UserFacingError as error:
                raise CommandError(str(error)) from None
            self.stdout.write(f"Token {made.token.name!r} for {user.username} (shown once; store it now):")
            self.stdout.write(made.key)
        elif action == "list":
            tokens = ApiToken.objects.select_related("user")
            if options["username"]:
                tokens = tokens.filter(user=self._user(options["username"]))
            for token in tokens:
                state = f"revoked {token.revoked_at:%Y-%m-%d %H:%M}" if token.revoked_at else "live"
                used = f"last used {token.last_used_at:%Y-%m-%d %H:%M}" if token.last_used_at else "never used"
                self.stdout.write(f"{token.prefix}…  {token.user.username:<16} {token.name:<30} {state}, {used}")
        else:
            matches = list(ApiToken.objects.live().filter(prefix__startswith=options["prefix"])[:2])
            if len(matches) != 1:
                raise CommandError(
                    f"no live token starts with {options['prefix']!r}"
                    if not matches
                    else f"more than one live token starts with {options['prefix']!r}: give more characters"
                )
            token = token_revoke(token=matches[0])
            self.stdout.write(f"Revoked {token.name!r} of {token.user.username} ({token.prefix}…).")

    def _user(self, username: str):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        return user
