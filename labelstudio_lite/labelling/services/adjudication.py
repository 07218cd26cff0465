from __future__ import annotations

from typing import Any

from django.utils import timezone

from evalcore.services.problems import UserFacingError

from ..models import Adjudication, Campaign, Item, Label
from .assignment import LabellingError, label_value


def adjudicate(
    *,
    campaign: Campaign,
    item_id: int,
    value: str = "",
    note: str = "",
    user: Any = None,
    score: int | None = None,
) -> Adjudication:
    """Set the final label of an item whose annotators disagree (or change it).

    On a binary campaign the final label is supported or unsupported; on an ordinal one it is a score on
    the scale (``score``), its class set by the campaign's threshold as on the labelling page.
    """
    if campaign.ordinal:
        if score is None:
            raise UserFacingError(
                f"a final label on this campaign is a score from {campaign.scale_min} to {campaign.scale_max}",
                field="score",
            )
        try:
            value, score = label_value(campaign, score)
        except LabellingError as error:
            raise UserFacingError(str(error), field="score") from None
    else:
        if value not in (Label.Value.SUPPORTED, Label.Value.UNSUPPORTED):
            raise UserFacingError(f"a final label is supported or unsupported, got {value!r}", field="value")
        score = None
    item = Item.objects.filter(pk=item_id, campaign=campaign).first()
    if item is None:
        raise UserFacingError("that item is not in this campaign")
    adjudication, _ = Adjudication.objects.update_or_create(
        item=item,
        defaults={
            "value": value,
            "score": score,
            "note": note.strip(),
            "decided_by": user,
            "decided_at": timezone.now(),
        },
    )
    return adjudication
