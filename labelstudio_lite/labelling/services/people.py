"""People and their campaigns: inviting someone straight into campaigns, and deactivating someone mid-campaign.

The account services (``labelstudio_lite.accounts.services``) make the person and their way in;
these add what labelling needs around them, in the same transaction: the campaigns an invitee
labels, and the items a deactivated person held going back to the pool at once (their labels stay).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from labelstudio_lite.accounts.services import Access, user_invite, user_set_active

from ..models import Campaign, Lease
from .assignment import release_leases_of
from .campaigns import campaign_set_annotators


def person_invite(
    *,
    username: str,
    role: str,
    email: str = "",
    access: str = "link",
    campaigns: Iterable[Campaign] = (),
    by: Any = None,
) -> Access:
    """Invite a new person (a one-time link or a generated password, shown once) and assign them to ``campaigns``."""
    with transaction.atomic():
        access_given = user_invite(username=username, role=role, email=email, access=access, by=by)
        for campaign in campaigns:
            campaign_set_annotators(campaign=campaign, users=[access_given.user])
    return access_given


def person_set_active(*, user: Any, active: bool, by: Any = None) -> Any:
    """Deactivate a person (their held items go back to the pool; their labels stay) or bring them back."""
    with transaction.atomic():
        user = user_set_active(user=user, active=active, by=by)
        if not active:
            held = Lease.objects.active().filter(annotator=user).values_list("item__campaign", flat=True).distinct()
            for campaign in Campaign.objects.filter(pk__in=list(held)):
                release_leases_of(campaign=campaign, user=user)
    return user
