"""Which labelling page a person labels a campaign from, and how many items it may hold ahead.

One page at a time: a person's leases are theirs, not a tab's, so two tabs (or a laptop and a phone)
on one campaign are handed the same items and each answers what the other already did. So a page
claims the campaign (``CampaignAnnotator.page``) when it asks for items; another page is told the
campaign is open elsewhere, and when it was last heard from, and may take it over. In one browser
the pages agree among themselves first (``static/js/label-tabs.js``); this is the check that holds
across browsers and devices. A page that has not been heard from for a lease length has let its
items go and its claim lapses; one that closes says so (:func:`page_leave`). Answers are taken from
any page of the person's (an answer is never lost): only handing out items needs the claim.

How many items ahead: the page asks for a few minutes of work at its annotator's pace. Beyond the
base ``AHEAD`` it gets them while the campaign has plenty left for everyone: at most the open slots
divided by the people labelling it, so a campaign's last items are not sat on by one fast annotator.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import F, Q, Sum
from django.utils import timezone

from ..models import Campaign, CampaignAnnotator, Item

#: Items a page always holds beyond the one on screen (shown at once after a key; answerable offline).
AHEAD = 2
#: The most it may hold beyond the one on screen, however fast its annotator.
MAX_AHEAD = 15


@dataclass(frozen=True)
class PageClaim:
    """Whether the page may label the campaign now; if not, when the page that has it was last heard from."""

    ok: bool
    other_seen_at: Any = None

    def as_json(self) -> dict[str, Any]:
        seconds = max(0, int((timezone.now() - self.other_seen_at).total_seconds())) if self.other_seen_at else 0
        return {
            "seen_seconds_ago": seconds,
            "message": "This campaign is open in another tab, window or device of yours"
            + (f" (active {_ago(seconds)})" if self.other_seen_at else "")
            + ": the items you hold are shown there. Take it over here, and that page pauses.",
        }


def _ago(seconds: int) -> str:
    if seconds < 60:
        return "just now" if seconds < 10 else f"{seconds} seconds ago"
    minutes = seconds // 60
    return f"{minutes} minute{'s' if minutes != 1 else ''} ago"


def page_claim(*, campaign: Campaign, user: Any, page: str, take_over: bool = False) -> PageClaim:
    """Claim the campaign for ``page`` (renewing a claim it has); refused while another page of theirs has it.

    One conditional ``UPDATE``: two pages asking at once cannot both win.
    """
    now = timezone.now()
    membership = CampaignAnnotator.objects.filter(campaign=campaign, user=user)
    if not take_over:
        lapsed = now - timedelta(seconds=campaign.lease_length)
        membership = membership.filter(Q(page=page) | Q(page="") | Q(page_seen_at__lt=lapsed))
    if membership.update(page=page, page_seen_at=now):
        return PageClaim(True)
    seen = CampaignAnnotator.objects.filter(campaign=campaign, user=user).values_list("page_seen_at", flat=True)
    return PageClaim(False, next(iter(seen), None))


def page_leave(*, campaign: Campaign, user: Any, page: str) -> bool:
    """The page closed: give up its claim (its leases stay, so a reload of it finds its items again)."""
    return bool(CampaignAnnotator.objects.filter(campaign=campaign, user=user, page=page).update(page=""))


def items_ahead(*, campaign: Campaign, wanted: int | None) -> int:
    """How many items a page may hold beyond the one on screen: ``wanted`` within [AHEAD, MAX_AHEAD] and the fair share."""
    if wanted is None or wanted <= AHEAD:
        return AHEAD
    wanted = min(wanted, MAX_AHEAD)
    free = Item.objects.filter(campaign=campaign).aggregate(free=Sum(F("overlap") - F("slots_taken")))["free"] or 0
    people = CampaignAnnotator.objects.filter(campaign=campaign, user__is_active=True).count() or 1
    return max(AHEAD, min(wanted, free // people))
