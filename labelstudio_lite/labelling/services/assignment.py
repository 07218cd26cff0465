"""Hand out items and take labels, correctly under concurrency.

The rules:

* an item never gets more labels than the campaign's overlap, and no annotator labels it twice;
* two annotators asking at once never get a conflict;
* an item is held by a lease that expires and returns it to the pool.

How: each item keeps ``slots_taken`` (its labels plus active leases), guarded by a check constraint
``slots_taken <= overlap``. A claim is a conditional ``UPDATE ... SET slots_taken = slots_taken + 1
WHERE id = ? AND slots_taken < overlap`` (``Item.objects.filter(pk=...).take_slot()``; the counter's
other operations live beside it on the Item queryset): if it changed no row, someone else got the
last slot. A lease is closed the same way (``Lease.objects.filter(pk=...).close(status=...)``
changes the row only while it is active), so only one request gives its slot back.
On PostgreSQL the candidate row is first locked with ``SELECT ... FOR UPDATE SKIP LOCKED``, so
concurrent annotators skip each other's rows instead of queueing. On SQLite (the embedded mode)
transactions take the write lock at BEGIN (``transaction_mode = IMMEDIATE``), so claims are
serialized and the conditional update alone is correct. A unique constraint keeps one label per
(item, annotator): a double submit stores one label.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from evalcore.services.problems import UserFacingError

from ..models import Campaign, CampaignAnnotator, Item, Label, Lease


class LabellingError(UserFacingError):
    pass


class LeaseExpired(LabellingError):
    pass


class NotAssigned(LabellingError):
    pass


@dataclass(frozen=True)
class Served:
    """The item an annotator should label now, and their lease on it."""

    item: Item
    lease: Lease


def _duration(seconds: int) -> str:
    return f"{seconds // 60} minutes" if seconds >= 120 else f"{seconds} seconds"


def _require_member(campaign: Campaign, user: Any) -> None:
    if user.pk is not None and getattr(campaign, "_annotator_checked", None) == user.pk:
        return  # this instance came from campaign_for_labelling(user, ...) in this request
    if not CampaignAnnotator.objects.filter(campaign=campaign, user=user).exists():
        raise NotAssigned("You are not assigned to this campaign; ask its eval owner.")


def _check_value(value: str) -> None:
    if value not in Label.Value.values:
        raise LabellingError(f"a label is one of {', '.join(Label.Value.values)}, got {value!r}")


def _close(*, lease_id: int, item_id: int, status: str) -> bool:
    """Close an active lease and give its slot back; False if it was no longer active."""
    if not Lease.objects.filter(pk=lease_id).close(status=status):
        return False
    Item.objects.filter(pk=item_id).give_back_slot()
    return True


def release_expired(*, campaign: Campaign) -> int:
    """Return expired leases of the campaign to the pool; return how many were released."""
    expired = list(
        Lease.objects.active()
        .filter(item__campaign=campaign, expires_at__lt=timezone.now())
        .order_by("pk")
        .values_list("pk", "item_id")[:500]  # one lock order: no deadlock between releasers
    )
    return sum(_close(lease_id=pk, item_id=item_id, status=Lease.Status.EXPIRED) for pk, item_id in expired)


def release_leases_of(*, campaign: Campaign, user: Any) -> None:
    """End every active lease the user holds in the campaign (their items go back to the pool)."""
    with transaction.atomic():
        for pk, item_id in (
            Lease.objects.active().filter(item__campaign=campaign, annotator=user).values_list("pk", "item_id")
        ):
            _close(lease_id=pk, item_id=item_id, status=Lease.Status.EXPIRED)


def _candidates(campaign: Campaign, user: Any, *, avoid_skipped: bool):
    mine = Label.objects.filter(item=OuterRef("pk"), annotator=user)
    items = Item.objects.filter(campaign=campaign, slots_taken__lt=F("overlap")).exclude(Exists(mine))
    if avoid_skipped:
        skipped = Lease.objects.filter(item=OuterRef("pk"), annotator=user, status=Lease.Status.SKIPPED)
        items = items.exclude(Exists(skipped))
    return items.order_by("position")


def next_item(*, campaign: Campaign, user: Any) -> Served | None:
    """Return the item this annotator should label now, claiming it; None when their share is done.

    An annotator who already holds a live lease gets the same item back (a reload or a second tab
    never claims a second slot). Items they skipped come back only when nothing else is left.
    """
    _require_member(campaign, user)
    now = timezone.now()
    with transaction.atomic():
        release_expired(campaign=campaign)
        # the item comes with its row and question: the caller shows them, so no second query
        held = (
            Lease.objects.active()
            .select_related("item__row__question")
            .filter(item__campaign=campaign, annotator=user)
            .order_by("served_at")
            .first()
        )
        if held is not None:
            held.expires_at = now + timedelta(seconds=campaign.lease_seconds)
            Lease.objects.filter(pk=held.pk).update(expires_at=held.expires_at)
            return Served(held.item, held)
        for avoid_skipped in (True, False):
            for _ in range(5):
                query = _candidates(campaign, user, avoid_skipped=avoid_skipped).select_related("row__question")
                if connection.features.has_select_for_update_skip_locked:
                    query = query.select_for_update(skip_locked=True, of=("self",))
                item = query.first()
                if item is None and connection.features.has_select_for_update_skip_locked:
                    # Every open item may be locked for a moment by another annotator's claim or
                    # submit: wait for the lock instead of telling this annotator they are done.
                    item = (
                        _candidates(campaign, user, avoid_skipped=avoid_skipped).select_for_update(of=("self",)).first()
                    )
                if item is None:
                    break
                if Item.objects.filter(pk=item.pk).take_slot():
                    lease = Lease.objects.create(
                        item=item,
                        annotator=user,
                        served_at=now,
                        expires_at=now + timedelta(seconds=campaign.lease_seconds),
                    )
                    item.slots_taken += 1
                    return Served(item, lease)
    return None


def submit_label(
    *,
    campaign: Campaign,
    user: Any,
    item_id: int,
    value: str,
    rationale: str = "",
    source: str = "ui",
) -> Label:
    """Record the annotator's answer on an item they hold.

    Idempotent: a second submit of the same item (double click, retry, two tabs) returns the label
    already stored. A lease that expired is refused with a message, never silently accepted.
    """
    _check_value(value)
    _require_member(campaign, user)
    rationale = (rationale or "").strip()[:5000]
    refused = False
    with transaction.atomic():
        existing = Label.objects.filter(item_id=item_id, item__campaign=campaign, annotator=user).first()
        if existing is not None:
            return existing
        lease = Lease.objects.active().filter(item_id=item_id, item__campaign=campaign, annotator=user).first()
        now = timezone.now()
        if lease is None or lease.expires_at < now:
            if lease is not None:
                # an expired lease is closed (its slot back to the pool) and that is committed:
                # the refusal is raised after the transaction, so it does not roll the release back
                _close(lease_id=lease.pk, item_id=lease.item_id, status=Lease.Status.EXPIRED)
            refused = True
        else:
            Lease.objects.filter(pk=lease.pk).update(status=Lease.Status.SUBMITTED, closed_at=now)
            seconds = (now - lease.served_at).total_seconds()
            try:
                with transaction.atomic():
                    label = Label.objects.create(
                        item_id=item_id,
                        annotator=user,
                        value=value,
                        rationale=rationale,
                        seconds=min(seconds, float(campaign.lease_seconds)),
                        source=source,
                        created_at=now,
                        updated_at=now,
                    )
            except IntegrityError:
                return Label.objects.get(item_id=item_id, annotator=user)
            if value == Label.Value.CANT_TELL:
                # can't-tell is recorded but is not a label: the slot goes back for someone else
                Item.objects.filter(pk=item_id).give_back_slot()
            else:
                Item.objects.filter(pk=item_id).count_label()
    if refused:
        raise LeaseExpired(
            f"Your hold on this item ran out (after {_duration(campaign.lease_seconds)}) and it went back to the "
            f"pool, so this label was not saved. Take the next item."
        )
    return label


def skip_item(*, campaign: Campaign, user: Any, item_id: int) -> None:
    """Give the held item back to the pool; it returns to this annotator only when nothing else is left."""
    _require_member(campaign, user)
    with transaction.atomic():
        lease = Lease.objects.active().filter(item_id=item_id, item__campaign=campaign, annotator=user).first()
        if lease is not None:
            _close(lease_id=lease.pk, item_id=lease.item_id, status=Lease.Status.SKIPPED)


def change_label(*, campaign: Campaign, user: Any, label_id: int, value: str, rationale: str | None = None) -> Label:
    """Change one of the annotator's own recent answers, keeping the overlap rule."""
    _check_value(value)
    _require_member(campaign, user)
    with transaction.atomic():
        label = Label.objects.select_for_update().filter(pk=label_id, item__campaign=campaign, annotator=user).first()
        if label is None:
            raise LabellingError("That label is not one of yours in this campaign.")
        was_counted, now_counted = label.value != Label.Value.CANT_TELL, value != Label.Value.CANT_TELL
        item = Item.objects.filter(pk=label.item_id)
        if now_counted and not was_counted:
            if not item.take_labelled_slot():
                raise LabellingError("Enough people have labelled this item meanwhile; your can't-tell stays.")
        elif was_counted and not now_counted:
            item.give_back_labelled_slot()
        label.value = value
        if rationale is not None:
            label.rationale = rationale.strip()[:5000]
        label.updated_at = timezone.now()
        label.save(update_fields=["value", "rationale", "updated_at"])
    return label
