"""Hand out items and take labels, correctly under concurrency.

The rules:

* an item never gets more labels than the campaign's overlap, and no annotator labels it twice;
* two annotators asking at once never get a conflict;
* an item is held by a lease that expires and returns it to the pool;
* an answer is never lost to a lease that ran out while nobody else took the item, and an answer
  sent twice (a retry, a double click) is stored once: answers carry an idempotency key.

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
from enum import StrEnum
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


class AlreadyAnswered(LabellingError):
    """The annotator answered this item already, with another answer (a second tab): the first one stands."""

    def __init__(self, message: str, *, label: Label) -> None:
        super().__init__(message)
        self.label = label


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


def label_value(campaign: Campaign, value: Any) -> tuple[str, int | None]:
    """The label's class and score for an answer: ``supported`` / ``unsupported`` / ``cant_tell`` on a binary
    campaign; a score on the scale (or ``cant_tell``) on an ordinal one, its class set by the threshold."""
    if not campaign.ordinal:
        _check_value(value)
        return value, None
    if value == Label.Value.CANT_TELL:
        return value, None
    try:
        score = int(str(value).strip())
    except ValueError:
        score = None
    if score is None or score not in campaign.scale_points:
        raise LabellingError(
            f"a label on this campaign is a score from {campaign.scale_min} to {campaign.scale_max} or cant_tell, "
            f"got {value!r}"
        )
    return (Label.Value.UNSUPPORTED if campaign.fails(score) else Label.Value.SUPPORTED), score


def current_guideline_version(campaign: Campaign) -> int:
    """The guideline version annotators are shown now (1 for a campaign that never got a new one)."""
    guideline = campaign.guideline
    return guideline.version if guideline else 1


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


def _held(campaign: Campaign, user: Any):
    return Lease.objects.active().filter(item__campaign=campaign, annotator=user)


def _claim(campaign: Campaign, user: Any, *, now, holding: list[int]) -> Served | None:
    """Claim one more item for the annotator (not one they hold already); None when none is left."""
    for avoid_skipped in (True, False):
        for _ in range(5):
            query = _candidates(campaign, user, avoid_skipped=avoid_skipped).exclude(pk__in=holding)
            query = query.select_related("row__question")
            if connection.features.has_select_for_update_skip_locked:
                query = query.select_for_update(skip_locked=True, of=("self",))
            item = query.first()
            if item is None and connection.features.has_select_for_update_skip_locked:
                # Every open item may be locked for a moment by another annotator's claim or
                # submit: wait for the lock instead of telling this annotator they are done.
                item = (
                    _candidates(campaign, user, avoid_skipped=avoid_skipped)
                    .exclude(pk__in=holding)
                    .select_for_update(of=("self",))
                    .first()
                )
            if item is None:
                break
            if Item.objects.filter(pk=item.pk).take_slot():
                lease = Lease.objects.create(
                    item=item,
                    annotator=user,
                    served_at=now,
                    expires_at=now + timedelta(seconds=campaign.lease_length),
                )
                item.slots_taken += 1
                return Served(item, lease)
    return None


def _fill(campaign: Campaign, user: Any, count: int) -> list[Served]:
    """The annotator's held items (renewed), then claims up to ``count`` (inside the caller's transaction)."""
    now = timezone.now()
    expires_at = now + timedelta(seconds=campaign.lease_length)
    served = []
    # their own holds first, even past their end (still active: nobody could take the slot), so that
    # releasing the campaign's expired leases never takes an item the page was just told it holds
    renewed = _held(campaign, user).update(expires_at=expires_at)
    release_expired(campaign=campaign)
    if renewed:
        # the items come with their rows and questions: the caller shows them, so no second query
        held = _held(campaign, user).select_related("item__row__question").order_by("served_at", "pk")[:count]
        served = [Served(lease.item, lease) for lease in held]
    holding = [s.item.pk for s in served]
    while len(served) < count:
        claimed = _claim(campaign, user, now=now, holding=holding)
        if claimed is None:
            break
        served.append(claimed)
        holding.append(claimed.item.pk)
    return served


def held_items(*, campaign: Campaign, user: Any, count: int = 1) -> list[Served]:
    """Return the ``count`` items this annotator should label next, in order, claiming what is missing.

    The items they already hold come first, oldest first (a reload or a second tab never claims
    more slots); every lease they hold in the campaign is renewed (asking is activity). Items they
    skipped come back only when nothing else is left. Fewer than ``count`` when their share runs out.
    """
    _require_member(campaign, user)
    with transaction.atomic():
        return _fill(campaign, user, count)


def next_item(*, campaign: Campaign, user: Any) -> Served | None:
    """Return the item this annotator should label now, claiming it; None when their share is done.

    An annotator who already holds a live lease gets that item back (a reload or a second tab
    never claims a second slot), with the lease renewed. Items they skipped come back only when
    nothing else is left.
    """
    served = held_items(campaign=campaign, user=user, count=1)
    return served[0] if served else None


class Holding(StrEnum):
    """Where an item an annotator's page shows stands now."""

    HELD = "held"  # their lease is active (renewed just now)
    ANSWERED = "answered"  # they have answered it (in this tab or another one)
    LOST = "lost"  # their hold ended and someone else took the item: it is no longer theirs to answer


def _stand(campaign: Campaign, user: Any, item_ids: list[int], *, expires_at) -> dict[int, Holding]:
    """Where each item stands for the annotator; a hold that ended is taken again while the item has a free slot."""
    leases = Lease.objects.filter(item_id__in=item_ids, item__campaign=campaign, annotator=user)
    statuses = dict(leases.values_list("item_id", "status").order_by("served_at"))  # the latest lease wins
    answered = set(
        Label.objects.filter(item_id__in=item_ids, item__campaign=campaign, annotator=user).values_list(
            "item_id", flat=True
        )
    )
    out: dict[int, Holding] = {}
    for item_id in item_ids:
        if item_id in answered:
            out[item_id] = Holding.ANSWERED
        elif statuses.get(item_id) == Lease.Status.ACTIVE:
            out[item_id] = Holding.HELD
        elif item_id in statuses and Item.objects.filter(pk=item_id).take_slot():
            Lease.objects.create(item_id=item_id, annotator=user, served_at=timezone.now(), expires_at=expires_at)
            out[item_id] = Holding.HELD
        else:
            out[item_id] = Holding.LOST
    return out


def renew_leases(*, campaign: Campaign, user: Any, item_ids: list[int]) -> dict[int, Holding]:
    """Keep the annotator's hold on the items their page shows (they are active); say where each stands.

    An active lease is extended by the campaign's lease time. A hold that ended (it expired, or
    they skipped the item) is taken again when the item still has a free slot, so an annotator
    who comes back to an item keeps it unless someone else took it meanwhile.
    """
    _require_member(campaign, user)
    item_ids = sorted({int(i) for i in item_ids})[:50]
    if not item_ids:
        return {}
    expires_at = timezone.now() + timedelta(seconds=campaign.lease_length)
    with transaction.atomic():
        out = _stand(campaign, user, item_ids, expires_at=expires_at)
        _held(campaign, user).filter(item_id__in=item_ids).update(expires_at=expires_at)
    return out


@dataclass(frozen=True)
class Handout:
    """What the labelling page holds after asking: its items in order, and where the ones it showed stand."""

    served: list[Served]
    holding: dict[int, Holding]


def hand_out(*, campaign: Campaign, user: Any, holding: list[int], count: int) -> Handout:
    """Renew the page's hold on the items it shows (as :func:`renew_leases`), then fill its queue to ``count`` items."""
    _require_member(campaign, user)
    holding = sorted({int(i) for i in holding})[:50]
    expires_at = timezone.now() + timedelta(seconds=campaign.lease_length)
    with transaction.atomic():
        statuses = _stand(campaign, user, holding, expires_at=expires_at) if holding else {}
        return Handout(served=_fill(campaign, user, count), holding=statuses)


def _repeat(label: Label, key: str) -> Label:
    """The stored answer, when a submit repeats it (same key, or no key at all); otherwise it is another answer."""
    if key and label.idempotency_key != key:
        raise AlreadyAnswered(
            f"You already answered this item ({label.get_value_display().lower()}), in another tab or window; "
            "this answer was not stored. Press Z to change it.",
            label=label,
        )
    return label


def submit_label(
    *,
    campaign: Campaign,
    user: Any,
    item_id: int,
    value: str,
    rationale: str = "",
    source: str = "ui",
    key: str = "",
    seconds: float | None = None,
) -> Label:
    """Record the annotator's answer on an item handed to them.

    Idempotent: an answer sent again with the same ``key`` (a retry after a network error, a
    double click), or with no key at all, returns the label already stored; sent with the same key
    but another value or rationale (the page took it back and the annotator answered again before
    it heard whether the first try arrived) it changes that label. An answer with another key to
    an item they already answered (a second tab) raises :class:`AlreadyAnswered`.

    An answer is never lost to a lease that ran out: while the lease is active (even past its
    expiry) it holds the item's slot; once it was released, the answer takes a free slot if the
    item still has one. Only when someone else took the last slot is it refused
    (:class:`LeaseExpired`). ``seconds`` is the time the item was on screen, as the page measured
    it; by default the time since it was handed out.
    """
    value, score = label_value(campaign, value)
    _require_member(campaign, user)
    rationale = (rationale or "").strip()[:5000]
    key = (key or "").strip()[:64]
    try:
        with transaction.atomic():
            existing = Label.objects.filter(item_id=item_id, item__campaign=campaign, annotator=user).first()
            if existing is not None:
                if (
                    key
                    and existing.idempotency_key == key
                    and (existing.value, existing.score, existing.rationale) != (value, score, rationale)
                ):
                    # the same answer, revised before the page heard back (undone and given again): latest wins
                    return change_label(
                        campaign=campaign,
                        user=user,
                        label_id=existing.pk,
                        value=value if score is None else str(score),
                        rationale=rationale,
                    )
                return _repeat(existing, key)
            now = timezone.now()
            lease = _held(campaign, user).filter(item_id=item_id).first()
            if lease is not None:
                # active, even if past its expiry: nobody took the slot it holds
                Lease.objects.filter(pk=lease.pk).update(status=Lease.Status.SUBMITTED, closed_at=now)
                holds_slot = True
            else:
                lease = (
                    Lease.objects.filter(item_id=item_id, item__campaign=campaign, annotator=user)
                    .order_by("-served_at")
                    .first()
                )
                if lease is None:
                    raise LeaseExpired(
                        "This item was not handed to you, so this answer was not saved. Take the next item."
                    )
                holds_slot = value != Label.Value.CANT_TELL  # can't-tell needs no slot
                if holds_slot and not Item.objects.filter(pk=item_id).take_slot():
                    raise LeaseExpired(
                        f"Your hold on this item ran out (after {_duration(campaign.lease_length)}) and someone "
                        "else took it meanwhile, so this answer was not saved."
                    )
            if seconds is None or not 0 <= seconds < float("inf"):
                seconds = (now - lease.served_at).total_seconds()
            label = Label.objects.create(
                item_id=item_id,
                annotator=user,
                value=value,
                score=score,
                guideline_version=current_guideline_version(campaign),
                rationale=rationale,
                seconds=min(seconds, float(campaign.lease_length)),
                source=source,
                idempotency_key=key,
                created_at=now,
                updated_at=now,
            )
            if value == Label.Value.CANT_TELL:
                if holds_slot:  # can't-tell is recorded but is not a label: the slot goes back for someone else
                    Item.objects.filter(pk=item_id).give_back_slot()
            else:
                Item.objects.filter(pk=item_id).count_label()
    except IntegrityError:
        # a concurrent submit of this annotator stored its answer first (everything above rolled back)
        existing = Label.objects.filter(item_id=item_id, annotator=user).first()
        if existing is None:
            raise LabellingError("This answer's key was already used for another item; reload the page.") from None
        return _repeat(existing, key)
    return label


def skip_item(*, campaign: Campaign, user: Any, item_id: int) -> None:
    """Give the held item back to the pool; it returns to this annotator only when nothing else is left."""
    _require_member(campaign, user)
    with transaction.atomic():
        lease = Lease.objects.active().filter(item_id=item_id, item__campaign=campaign, annotator=user).first()
        if lease is not None:
            _close(lease_id=lease.pk, item_id=lease.item_id, status=Lease.Status.SKIPPED)


def change_label(*, campaign: Campaign, user: Any, label_id: int, value: str, rationale: str | None = None) -> Label:
    """Change one of the annotator's own recent answers, keeping the overlap rule (under the guideline shown now)."""
    value, score = label_value(campaign, value)
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
        label.value, label.score = value, score
        label.guideline_version = current_guideline_version(campaign)
        if rationale is not None:
            label.rationale = rationale.strip()[:5000]
        label.updated_at = timezone.now()
        label.save(update_fields=["value", "score", "guideline_version", "rationale", "updated_at"])
    return label
