"""Reads for the labelling app: the blind item view, progress, agreement and final labels."""

from __future__ import annotations

import html
import re
import statistics
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

from django.db.models import Count, F, Max, Prefetch, Q, QuerySet
from django.utils import timezone

from evalcore.engine import UndefinedMetricWarning
from evalcore.engine.reliability import krippendorff_alpha, pairwise_kappa
from evalcore.selectors import NotFound

from .models import (
    Adjudication,
    Campaign,
    CampaignAnnotator,
    ExportRecord,
    Item,
    Label,
    Lease,
    RemeasurementView,
    VerdictSet,
)
from .results import Result

COUNTED = (Label.Value.SUPPORTED, Label.Value.UNSUPPORTED)
RECENT_LABELS = 20


# ----------------------------------------------------------------------------------------------
# What an annotator may see
# ----------------------------------------------------------------------------------------------


def blind_item(item: Item, *, shows: str | None = None) -> dict[str, Any]:
    """Return exactly what an annotator may see of an item, and nothing else.

    ``shows`` (the campaign's, by default) is what the metric needs: the context for faithfulness,
    the question alone for relevance, the question's reference answer for correctness.

    An allowlist on purpose: the judge's verdicts and rationales, scores, retrieved ids beyond the
    context, metadata and other annotators' labels never leave this function.
    """
    row = item.row
    shows = shows or item.campaign.shows
    chunks = (
        [{"n": i + 1, "id": c["id"], "text": c["text"]} for i, c in enumerate(row.context_chunks)]
        if shows == Campaign.Shows.CONTEXT
        else []
    )
    claim_text = None
    if item.claim_index is not None:
        claims = row.claims or []
        claim_text = claims[item.claim_index]["text"] if item.claim_index < len(claims) else ""
    answer = row.answer or ""
    return {
        "item_id": item.pk,
        "question": row.question.text,
        "context": chunks,
        "answer": answer,
        "answer_html": highlight(answer, claim_text) if claim_text else html.escape(answer),
        "claim": claim_text,
        "claim_number": None if item.claim_index is None else item.claim_index + 1,
        "claim_count": len(row.claims or []) if item.claim_index is not None else None,
        "shows": shows,
        # what correctness is judged against; shown only on campaigns that validate it
        "reference": row.question.reference_answer if shows == Campaign.Shows.REFERENCE else None,
    }


def highlight(answer: str, claim: str) -> str:
    """Return the answer as HTML with the claim marked where it appears verbatim."""
    if not claim:
        return html.escape(answer)
    index = answer.find(claim)
    if index < 0:
        match = re.search(re.escape(claim.rstrip(". ")), answer)
        if not match:
            return html.escape(answer)
        index, end = match.start(), match.end()
    else:
        end = index + len(claim)
    return (
        html.escape(answer[:index])
        + '<mark class="claim">'
        + html.escape(answer[index:end])
        + "</mark>"
        + html.escape(answer[end:])
    )


def campaigns_for_annotator(user: Any) -> QuerySet[Campaign]:
    return Campaign.objects.filter(campaignannotator__user=user).order_by("-created_at")


def own_labels(*, campaign: Campaign, user: Any) -> QuerySet[Label]:
    """The annotator's own labels in the campaign, with the item's question (for its id)."""
    return Label.objects.filter(item__campaign=campaign, annotator=user).select_related("item__row__question")


def own_label(*, campaign: Campaign, user: Any, label_id: int) -> Label | None:
    """One of the annotator's own labels, or None when it is someone else's or in another campaign."""
    return own_labels(campaign=campaign, user=user).filter(pk=label_id).first()


@dataclass(frozen=True)
class Share:
    done: int
    cant_tell: int
    target: int
    remaining_in_campaign: int


def annotator_share(*, campaign: Campaign, user: Any) -> Share:
    """The annotator's progress: labels given against their share of the campaign's label slots."""
    # three queries (it runs on every labelling request): the annotator's labels, the items, the annotators
    cant_tell = Q(value=Label.Value.CANT_TELL)
    labels = Label.objects.filter(item__campaign=campaign, annotator=user).aggregate(
        done=Count("pk", filter=~cant_tell), cant=Count("pk", filter=cant_tell)
    )
    done, cant = labels["done"], labels["cant"]
    items = Item.objects.filter(campaign=campaign).aggregate(
        n=Count("pk"), open=Count("pk", filter=Q(label_count__lt=F("overlap")))
    )
    n_items, open_slots = items["n"], items["open"]
    n_annotators = max(1, CampaignAnnotator.objects.filter(campaign=campaign).count())
    per_person = -(-n_items * campaign.overlap // n_annotators)
    target = min(n_items, per_person)
    return Share(done=done, cant_tell=cant, target=max(target, done), remaining_in_campaign=open_slots)


def recent_labels(*, campaign: Campaign, user: Any, limit: int = RECENT_LABELS) -> list[Label]:
    """The annotator's own latest answers, newest first (for Back)."""
    return list(
        Label.objects.filter(item__campaign=campaign, annotator=user)
        .select_related("item__row__question")
        .order_by("-updated_at", "-pk")[:limit]
    )


# ----------------------------------------------------------------------------------------------
# Final labels (what the judge is compared with)
# ----------------------------------------------------------------------------------------------


class FinalStatus(StrEnum):
    """How an item's final label came about (or why it has none yet). The one list of these statuses."""

    AGREED = "agreed"  # every label the same
    MAJORITY = "majority"  # a majority of the labels
    ADJUDICATED = "adjudicated"  # an eval owner decided
    CONFLICT = "conflict"  # a tie: no final label until adjudicated
    IN_PROGRESS = "in_progress"  # fewer labels than the overlap
    UNLABELLED = "unlabelled"

    @property
    def words(self) -> str:
        """The status as pages show it (never the internal key)."""
        return {
            "agreed": "agreed",
            "majority": "decided by a majority",
            "adjudicated": "decided by an eval owner",
            "conflict": "in conflict",
            "in_progress": "still being labelled",
            "unlabelled": "not labelled yet",
        }[self.value]


@dataclass(frozen=True)
class FinalLabel:
    item_id: int
    value: str | None  # "supported" / "unsupported", or None when there is none yet
    status: FinalStatus
    votes: dict[str, int]

    @property
    def needs_decision(self) -> bool:
        return self.status == FinalStatus.CONFLICT


def final_labels(campaign: Campaign) -> dict[int, FinalLabel]:
    """The final human label of every item: adjudicated, else the majority of complete labels.

    An item with fewer labels than the overlap is ``in_progress`` (it gets no final label yet);
    a tie is a ``conflict`` until an eval owner adjudicates it. Can't-tell answers are not votes.
    """
    votes: dict[int, Counter] = defaultdict(Counter)
    for item_id, value in Label.objects.filter(item__campaign=campaign, value__in=COUNTED).values_list(
        "item_id", "value"
    ):
        votes[item_id][value] += 1
    adjudicated = dict(Adjudication.objects.filter(item__campaign=campaign).values_list("item_id", "value"))
    out: dict[int, FinalLabel] = {}
    for item_id, overlap in Item.objects.filter(campaign=campaign).values_list("pk", "overlap"):
        counter = votes.get(item_id, Counter())
        if item_id in adjudicated:
            out[item_id] = FinalLabel(item_id, adjudicated[item_id], FinalStatus.ADJUDICATED, dict(counter))
            continue
        total = sum(counter.values())
        if total == 0:
            out[item_id] = FinalLabel(item_id, None, FinalStatus.UNLABELLED, {})
        elif total < overlap:
            out[item_id] = FinalLabel(item_id, None, FinalStatus.IN_PROGRESS, dict(counter))
        else:
            ranked = counter.most_common()
            if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
                out[item_id] = FinalLabel(item_id, None, FinalStatus.CONFLICT, dict(counter))
            else:
                status = FinalStatus.AGREED if len(ranked) == 1 else FinalStatus.MAJORITY
                out[item_id] = FinalLabel(item_id, ranked[0][0], status, dict(counter))
    return out


def final_label_counts(campaign: Campaign) -> dict[FinalStatus, int]:
    """How many items each final-label status holds (statuses no item has are left out)."""
    counts: dict[FinalStatus, int] = {}
    for final in final_labels(campaign).values():
        counts[final.status] = counts.get(final.status, 0) + 1
    return counts


def judge_verdicts(campaign: Campaign, verdict_set: VerdictSet | None = None) -> dict[int, bool]:
    """The judge's verdict per item: the run's own judge, or an imported verdict set."""
    if verdict_set is None:
        return dict(Item.objects.filter(campaign=campaign).values_list("pk", "judge_supported"))
    return dict(verdict_set.verdicts.values_list("item_id", "supported"))


def disagreement_items(campaign: Campaign) -> QuerySet[Item]:
    """Items whose annotators disagree (including those a majority settles), for adjudication."""
    return (
        Item.objects.filter(campaign=campaign)
        .annotate(
            n_sup=Count("labels", filter=Q(labels__value=Label.Value.SUPPORTED)),
            n_uns=Count("labels", filter=Q(labels__value=Label.Value.UNSUPPORTED)),
        )
        .filter(n_sup__gt=0, n_uns__gt=0)
        .select_related("row__question", "adjudication")
        .order_by("position")
    )


@dataclass(frozen=True)
class Disagreement:
    """An item whose annotators disagree, as the eval owner adjudicates it (blind to the judge too)."""

    item: Item
    view: dict[str, Any]
    labels: list[Label]
    final: FinalLabel | None


def disagreements(campaign: Campaign) -> list[Disagreement]:
    """Every item whose annotators disagree, with their labels (not can't-tell) and its final label."""
    finals = final_labels(campaign)
    labels = Prefetch(
        "labels",
        queryset=Label.objects.select_related("annotator").exclude(value=Label.Value.CANT_TELL),
        to_attr="counted",
    )
    return [
        Disagreement(
            item=item, view=blind_item(item, shows=campaign.shows), labels=item.counted, final=finals.get(item.pk)
        )
        for item in disagreement_items(campaign).prefetch_related(labels)
    ]


# ----------------------------------------------------------------------------------------------
# Campaigns, exports and verdict sets (eval owners)
# ----------------------------------------------------------------------------------------------


def campaigns_list() -> QuerySet[Campaign]:
    return Campaign.objects.select_related("run__version__eval_set").order_by("-created_at")


def campaign_named(name: str) -> Campaign | None:
    return Campaign.objects.select_related("run__version__eval_set", "run__judge_config").filter(name=name).first()


def campaign_get(name: str) -> Campaign:
    """The campaign named ``name``; :class:`NotFound` if there is none."""
    campaign = campaign_named(name)
    if campaign is None:
        raise NotFound(f"there is no campaign named {name!r}")
    return campaign


def verdict_sets_of(campaign: Campaign) -> QuerySet[VerdictSet]:
    return campaign.verdict_sets.select_related("judge_config")


def verdict_set_in(campaign: Campaign, pk: Any) -> VerdictSet | None:
    """The campaign's verdict set with this id (a number or its digits), or None."""
    if isinstance(pk, str) and pk.isascii() and pk.isdigit():
        pk = int(pk)
    if isinstance(pk, bool) or not isinstance(pk, int) or not 0 < pk < 2**63:
        return None  # not an id (or none a database could hold)
    return verdict_sets_of(campaign).filter(pk=pk).first()


def verdict_set_asked(campaign: Campaign, pk: Any) -> VerdictSet | None:
    """The verdict set a door asks for by id (``?verdicts=``, ``--verdicts``): None when it asks for none,
    :class:`NotFound` when the campaign has no such set (never the run's judge instead)."""
    if not pk:
        return None
    verdict_set = verdict_set_in(campaign, pk)
    if verdict_set is None:
        raise NotFound(f"campaign {campaign.name!r} has no verdict set {pk}")
    return verdict_set


def remeasurement_opened(verdict_set: VerdictSet) -> bool:
    """Whether someone has deliberately opened the re-measurement of these verdicts (it is shown from then on)."""
    return RemeasurementView.objects.filter(verdict_set=verdict_set).exists()


def campaign_exports(campaign: Campaign) -> QuerySet[ExportRecord]:
    """Every export of the campaign, newest first."""
    return campaign.exports.select_related("created_by", "judge_config").order_by("-version")


def campaign_export(campaign: Campaign, version: int) -> ExportRecord | None:
    """A recorded export to download (again): its content was stored when it was made."""
    return ExportRecord.objects.filter(campaign=campaign, version=version).first()


# ----------------------------------------------------------------------------------------------
# Overview
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SplitProgress(Result):
    split: str
    name: str
    items: int
    complete: int
    share: float | None


@dataclass(frozen=True)
class PersonProgress(Result):
    name: str
    labels: int
    cant_tell: int
    median_seconds: float | None


@dataclass(frozen=True)
class CampaignProgress(Result):
    splits: tuple[SplitProgress, ...]
    items: int
    complete: int
    labels: int
    cant_tell: int
    people: tuple[PersonProgress, ...]
    assigned: tuple[str, ...]
    last_hour: int
    median_seconds: float | None


def campaign_progress(campaign: Campaign) -> CampaignProgress:
    """Items done per split, labels per annotator, throughput and median seconds per item."""
    items = Item.objects.filter(campaign=campaign)
    splits = []
    for split, name in Item.Split.choices:
        qs = items.filter(split=split)
        total = qs.count()
        complete = qs.filter(label_count__gte=campaign.overlap).count()
        splits.append(SplitProgress(split, name, total, complete, complete / total if total else None))
    labels = Label.objects.filter(item__campaign=campaign)
    seconds_of: dict[tuple[str | None, str], list[float]] = defaultdict(list)
    for username, external, seconds in labels.filter(seconds__isnull=False).values_list(
        "annotator__username", "external_annotator", "seconds"
    ):
        seconds_of[(username, external)].append(seconds)
    people = []
    for row in (
        labels.values("annotator__username", "external_annotator")
        .annotate(
            n=Count("pk", filter=~Q(value=Label.Value.CANT_TELL)),
            cant=Count("pk", filter=Q(value=Label.Value.CANT_TELL)),
        )
        .order_by("annotator__username", "external_annotator")
    ):
        seconds = seconds_of.get((row["annotator__username"], row["external_annotator"]))
        people.append(
            PersonProgress(
                name=row["annotator__username"] or f"{row['external_annotator']} (external)",
                labels=row["n"],
                cant_tell=row["cant"],
                median_seconds=statistics.median(seconds) if seconds else None,
            )
        )
    assigned = tuple(CampaignAnnotator.objects.filter(campaign=campaign).values_list("user__username", flat=True))
    named = {p.name for p in people}
    people.extend(PersonProgress(username, 0, 0, None) for username in assigned if username not in named)
    all_seconds = [s for group in seconds_of.values() for s in group]
    return CampaignProgress(
        splits=tuple(splits),
        items=items.count(),
        complete=items.filter(label_count__gte=campaign.overlap).count(),
        labels=labels.exclude(value=Label.Value.CANT_TELL).count(),
        cant_tell=labels.filter(value=Label.Value.CANT_TELL).count(),
        people=tuple(people),
        assigned=assigned,
        last_hour=labels.filter(created_at__gte=timezone.now() - timedelta(hours=1)).count(),
        median_seconds=statistics.median(all_seconds) if all_seconds else None,
    )


def _none_if_nan(value: float) -> float | None:
    return None if value != value else value


@dataclass(frozen=True)
class AnnotatorAgreement(Result):
    """Agreement between annotators on the items more than one labelled; kappa and alpha are NaN when undefined."""

    pairs: tuple[dict[str, Any], ...]  # per pair of annotators: a, b, n (shared items), agreement, kappa
    alpha: float
    overlapping_items: int
    disagreeing_items: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: undefined kappas and alpha are None."""
        return {
            "pairs": [{**p, "kappa": _none_if_nan(p["kappa"])} for p in self.pairs],
            "alpha": _none_if_nan(self.alpha),
            "overlapping_items": self.overlapping_items,
            "disagreeing_items": self.disagreeing_items,
        }


def annotator_agreement(campaign: Campaign) -> AnnotatorAgreement:
    """Pairwise Cohen's kappa and Krippendorff's alpha over items labelled by more than one person."""
    by_person: dict[str, dict[int, str]] = defaultdict(dict)
    by_item: dict[int, list[str]] = defaultdict(list)
    for item_id, username, external, value in Label.objects.filter(
        item__campaign=campaign, value__in=COUNTED
    ).values_list("item_id", "annotator__username", "external_annotator", "value"):
        person = username or f"{external} (external)"
        by_person[person][item_id] = value
        by_item[item_id].append(value)
    overlapping = [values for values in by_item.values() if len(values) >= 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        alpha = krippendorff_alpha(overlapping) if overlapping else float("nan")
    return AnnotatorAgreement(
        pairs=tuple(pairwise_kappa(by_person)),
        alpha=alpha,
        overlapping_items=len(overlapping),
        disagreeing_items=sum(1 for values in overlapping if len(set(values)) > 1),
    )


# ----------------------------------------------------------------------------------------------
# Who labelled what (the People pages)
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Work:
    """What one person did in one campaign: labels given (can't tell apart), items held now, their last answer."""

    campaign: str
    assigned: bool
    labels: int
    cant_tell: int
    held: int
    last_at: Any

    @property
    def answers(self) -> int:
        return self.labels + self.cant_tell


def work_by_person(*, user_ids: list[int] | None = None) -> dict[int, list[Work]]:
    """Per person (by id), each campaign they are assigned to or labelled in, newest answer first; three queries."""
    labels = Label.objects.filter(annotator__isnull=False)
    members = CampaignAnnotator.objects.all()
    leases = Lease.objects.active()
    if user_ids is not None:
        labels = labels.filter(annotator_id__in=user_ids)
        members = members.filter(user_id__in=user_ids)
        leases = leases.filter(annotator_id__in=user_ids)
    counted = labels.values("annotator_id", "item__campaign__name").annotate(
        labels=Count("pk", filter=Q(value__in=COUNTED)),
        cant_tell=Count("pk", filter=Q(value=Label.Value.CANT_TELL)),
        last_at=Max("updated_at"),
    )
    held = Counter(leases.values_list("annotator_id", "item__campaign__name"))
    assigned = set(members.values_list("user_id", "campaign__name"))
    found: dict[tuple[int, str], dict[str, Any]] = {
        (row["annotator_id"], row["item__campaign__name"]): row for row in counted
    }
    out: dict[int, list[Work]] = defaultdict(list)
    for user_id, name in sorted(set(found) | assigned | set(held)):
        row = found.get((user_id, name), {})
        out[user_id].append(
            Work(
                campaign=name,
                assigned=(user_id, name) in assigned,
                labels=row.get("labels", 0),
                cant_tell=row.get("cant_tell", 0),
                held=held.get((user_id, name), 0),
                last_at=row.get("last_at"),
            )
        )
    for works in out.values():
        works.sort(key=lambda w: (w.last_at is None, -(w.last_at.timestamp() if w.last_at else 0), w.campaign))
    return dict(out)
