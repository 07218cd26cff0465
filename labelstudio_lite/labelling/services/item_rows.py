"""Lines that name a campaign's item: ``question_id``, and ``claim_index`` (from 0) in claim campaigns.

Label import and verdict import both read such lines; this is their one reader of the item a line
names, with one set of field rules and messages. A line is read in a fixed order, so its first
problem is the one reported: the item's key, the importer's own fields, then whether the key
names an item of the campaign.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from evalcore.services.fields import FieldError, as_id, as_int
from evalcore.services.problems import ProblemCollector
from evalcore.services.readers import Record

from ..models import Campaign, Item

T = TypeVar("T")
ItemKey = tuple[str, int | None]


@dataclass(frozen=True)
class ItemRef:
    """What an import needs of an item (not its row: imports of thousands of lines stay light)."""

    pk: int
    overlap: int
    split: str


@dataclass(frozen=True)
class CampaignItems:
    """A campaign's items by the key lines name them with."""

    campaign_name: str
    claims: bool
    items: dict[ItemKey, ItemRef]
    ignore_answer_claim_index: bool = False

    def key_of(self, data: dict[str, Any]) -> ItemKey:
        """Read the item's key from a line; :class:`FieldError` when it is malformed or incomplete."""
        qid = as_id(data.get("question_id"), "question_id")
        if self.claims:
            return qid, as_int(data.get("claim_index"), "claim_index")
        if data.get("claim_index") not in (None, "") and not self.ignore_answer_claim_index:
            raise FieldError("claim_index", "this is an answer campaign: leave claim_index empty")
        return qid, None

    def item(self, key: ItemKey) -> ItemRef:
        """The item the key names; :class:`FieldError` on ``question_id`` when there is none."""
        found = self.items.get(key)
        if found is None:
            qid, claim_index = key
            what = f"question {qid!r}" + (f", claim {claim_index}" if claim_index is not None else "")
            raise FieldError("question_id", f"{what} is not an item of campaign {self.campaign_name!r}")
        return found


def campaign_items(campaign: Campaign, *, ignore_answer_claim_index: bool = False) -> CampaignItems:
    """Index the campaign's items by (question id, claim index), in one query.

    ``ignore_answer_claim_index``: in an answer campaign, read past a claim index instead of refusing
    it (verdict files come from judge pipelines that write one on every line).
    """
    rows = Item.objects.filter(campaign=campaign).values_list(
        "pk", "row__question__qid", "claim_index", "overlap", "split"
    )
    return CampaignItems(
        campaign_name=campaign.name,
        claims=campaign.unit == Campaign.Unit.CLAIM,
        items={(qid, claim_index): ItemRef(pk, overlap, split) for pk, qid, claim_index, overlap, split in rows},
        ignore_answer_claim_index=ignore_answer_claim_index,
    )


def item_lines(
    records: Iterable[Record], items: CampaignItems, read: Callable[[dict[str, Any]], T], problems: ProblemCollector
) -> Iterator[tuple[int, ItemRef, T]]:
    """Yield ``(line, item, read(data))`` for every line that names an item and whose fields ``read`` accepts.

    A :class:`FieldError` (from the key, from ``read`` or an unknown item) becomes a problem on its
    line and the line is passed over.
    """
    for record in records:
        try:
            key = items.key_of(record.data)
            value = read(record.data)
            item = items.item(key)
        except FieldError as error:
            problems.add(record.line, error.field, error.message)
            continue
        yield record.line, item, value
