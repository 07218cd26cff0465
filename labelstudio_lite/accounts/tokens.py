"""API tokens, stored hashed: made and revoked by their owner (the Access page or ``api_token``), checked per request.

A key is ``lsl_`` and 43 URL-safe characters (256 random bits), shown once when made; the database
keeps its SHA-256 digest and its first characters (to tell tokens apart), so a copy of the
database lets nobody in. Requests send ``Authorization: Token <key>``, as scripts always have;
keys made by DRF's ``drf_create_token`` before were moved over as digests (migration 0002), so
they keep working.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from rest_framework import authentication, exceptions

from evalcore.services.problems import UserFacingError

from .models import ApiToken, secret_digest

PREFIX = "lsl_"
#: ``last_used_at`` is written at most this often per token (not on every request).
USE_RECORDED_EVERY = timedelta(minutes=1)


@dataclass(frozen=True)
class NewToken:
    """A token just made: ``key`` is its secret, shown once."""

    token: ApiToken
    key: str


def token_create(*, user: Any, name: str, by: Any = None) -> NewToken:
    """Make an API token for ``user`` named ``name``; return it with its key (the only time the key exists)."""
    name = (name or "").strip()
    if not name:
        raise UserFacingError("name the token after what will use it (a CI job, a notebook)", field="name")
    if len(name) > 100:
        raise UserFacingError(f"a token's name has at most 100 characters, got {len(name)}", field="name")
    if not user.is_active:
        raise UserFacingError(f"{user.username} is deactivated: their tokens would not work")
    key = PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        digest=secret_digest(key),
        prefix=key[:12],
        created_by=by if getattr(by, "pk", None) else user,
    )
    return NewToken(token, key)


def token_revoke(*, token: ApiToken, by: Any = None) -> ApiToken:
    """Revoke a token: requests sending it are refused from now on (revoking twice changes nothing)."""
    with transaction.atomic():
        ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token.refresh_from_db(fields=["revoked_at"])
    return token


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>``, looked up by the key's digest; a revoked token or a deactivated user is refused."""

    def authenticate_credentials(self, key: str) -> tuple[Any, ApiToken]:
        token = ApiToken.objects.live().select_related("user").filter(digest=secret_digest(key)).first()
        if token is None:
            raise exceptions.AuthenticationFailed(
                "Invalid token (unknown or revoked): make a new one on your Access page."
            )
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("This token's user is deactivated.")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > USE_RECORDED_EVERY:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token
