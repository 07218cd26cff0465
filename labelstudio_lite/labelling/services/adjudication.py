from __future__ import annotations

from typing import Any

from django.utils import timezone

from evalcore.services.problems import UserFacingError

from ..models import Adjudication, Campaign, Item, Label


def adjudicate(*, campaign: Campaign, item_id: int, value: str, note: str = "", user: Any = None) -> Adjudication:
    """Set the final label of an item whose annotators disagree (or change it)."""
    if value not in (Label.Value.SUPPORTED, Label.Value.UNSUPPORTED):
        raise UserFacingError(f"a final label is supported or unsupported, got {value!r}")
    item = Item.objects.filter(pk=item_id, campaign=campaign).first()
    if item is None:
        raise UserFacingError("that item is not in this campaign")
    adjudication, _ = Adjudication.objects.update_or_create(
        item=item, defaults={"value": value, "note": note.strip(), "decided_by": user, "decided_at": timezone.now()}
    )
    return adjudication
