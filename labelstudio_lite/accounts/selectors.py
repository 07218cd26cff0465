"""Reads for the People and Access pages: each person with where they stand, and their tokens."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, Prefetch, Q
from django.utils import timezone

from .models import AccessLink, ApiToken


@dataclass(frozen=True)
class Standing:
    """Where a person stands, in words (never by colour alone): active, invited, reset pending, link expired, deactivated."""

    word: str
    detail: str
    tone: str  # pass | review | block: the badge's colour, beside the word

    @classmethod
    def of(cls, user: Any, link: AccessLink | None, now=None) -> Standing:
        now = now or timezone.now()
        if not user.is_active:
            return cls("deactivated", "cannot log in; their labels stay", "block")
        if link is not None and link.used_at is None and link.revoked_at is None:
            what = "invited" if link.purpose == AccessLink.Purpose.INVITE else "reset pending"
            if link.expires_at <= now:
                return cls(f"{what}, link expired", "make a new link for them", "block")
            return cls(
                what, f"link not used yet; works until {timezone.localtime(link.expires_at):%Y-%m-%d %H:%M}", "review"
            )
        if not user.has_usable_password():
            return cls("no password", "make them a link or a password", "review")
        return cls("active", "", "pass")


def latest_links(user_ids: list[int]) -> dict[int, AccessLink]:
    """Each person's newest one-time link, by user id."""
    out: dict[int, AccessLink] = {}
    for link in AccessLink.objects.filter(user_id__in=user_ids).order_by("user_id", "-created_at", "-id"):
        out.setdefault(link.user_id, link)
    return out


def people_list() -> list[Any]:
    """Every person, eval owners first then by name, each with ``standing`` and ``live_tokens``."""
    users = list(
        get_user_model()
        .objects.annotate(live_tokens=Count("api_tokens", filter=Q(api_tokens__revoked_at__isnull=True)))
        .order_by("-is_active", "role", "username")
    )
    links = latest_links([u.pk for u in users])
    now = timezone.now()
    for user in users:
        user.standing = Standing.of(user, links.get(user.pk), now)
    return users


def person_detail(user_id: int) -> Any | None:
    """One person with ``standing``, their tokens (newest first) and their links, or None."""
    user = (
        get_user_model()
        .objects.prefetch_related(
            Prefetch("api_tokens", queryset=ApiToken.objects.order_by("-created_at", "-id")),
            Prefetch("access_links", queryset=AccessLink.objects.select_related("created_by").order_by("-created_at")),
        )
        .filter(pk=user_id)
        .first()
    )
    if user is not None:
        links = list(user.access_links.all())
        user.standing = Standing.of(user, links[0] if links else None)
    return user


def tokens_of(user: Any) -> list[ApiToken]:
    return list(ApiToken.objects.filter(user=user).order_by("revoked_at", "-created_at", "-id"))
