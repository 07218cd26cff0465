"""Try a tuned judge prompt in one step: few-shot examples from a disagreement export, the held-out items judged.

From the judge report, an eval owner picks a disagreement export version (tuning split only) and
edits the verdict prompt. :func:`tuned_prompt_try` creates the new judge config (the base config
with that prompt and those examples pinned in its hash), judges the campaign's held-out items with
it through the cached runner, stores the verdicts as a :class:`VerdictSet` and opens the
re-measurement (recorded, as opening it by hand is).

The leakage guard, end to end:

* few-shot examples come only from a *disagreement* export whose items are all in a tuning split
  (:func:`few_shot_examples`, registered as evalcore's few-shot source); an example that is one of
  the measured campaign's held-out items (the same row and claim) is refused;
* a judged item's prompt holds its question, context, answer and claim, never a label (see
  :class:`evalcore.judging.prompts.ItemText`);
* once a re-measurement of the campaign was looked at, trying another prompt on its held-out
  items would tune on them: refused, with the way out (sample a fresh held-out set).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.urls import reverse

from evalcore.judging.prompts import ItemText, Prompts
from evalcore.judging.runner import cached_outputs, check_runnable
from evalcore.models import JudgeConfig
from evalcore.services.importing import Progress, no_progress
from evalcore.services.judge_configs import derived_config, judge_config_derived, normalize_judge_config
from evalcore.services.judge_runs import judge_calls
from evalcore.services.names import check_name
from evalcore.services.problems import UserFacingError

from ..models import Campaign, ExportRecord, Item, RemeasurementView, Verdict, VerdictSet
from ..selectors import campaign_export, campaign_get
from .exports import heldout_spent


class TunedPromptRefused(UserFacingError):
    pass


def _campaign_line(campaign: Campaign) -> list[Campaign]:
    """The campaign and the campaigns it is a fresh held-out sample of (their tuning splits tuned it)."""
    line, seen = [], set()
    while campaign is not None and campaign.pk not in seen:
        line.append(campaign)
        seen.add(campaign.pk)
        campaign = campaign.parent
    return line


def few_shot_exports(campaign: Campaign) -> list[ExportRecord]:
    """The exports that can tune a judge measured on ``campaign``: disagreement exports (jsonl, csv) with no
    held-out item, of the campaign or of the campaigns it is a fresh held-out sample of; newest first."""
    return list(
        ExportRecord.objects.filter(
            campaign__in=_campaign_line(campaign),
            kind=ExportRecord.Kind.DISAGREEMENTS,
            fmt__in=("jsonl", "csv"),
            heldout_items=0,
        )
        .select_related("campaign")
        .order_by("-created_at")
    )


def _export_examples(record: ExportRecord) -> list[dict[str, Any]]:
    if record.fmt == "jsonl":
        rows = [json.loads(line) for line in record.content.splitlines() if line.strip()]
        contexts = [row["context"] for row in rows]
        rationales = [row.get("human_rationales") or [] for row in rows]
    elif record.fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(record.content)))
        contexts = [[part for part in row["context"].split("\n\n") if part] for row in rows]
        rationales = [[r for r in row.get("human_rationales", "").split(" | ") if r] for row in rows]
    else:
        raise TunedPromptRefused(
            f"export v{record.version} is in the {record.fmt} format (for fine-tuning): pick a jsonl or csv export "
            "as few-shot examples"
        )
    examples = []
    for row, context, why in zip(rows, contexts, rationales):
        supported = row["human_label"] == "supported"
        default = "The context states it." if supported else "The context does not state it."
        examples.append(
            {
                "item_id": int(row["item_id"]),
                "question": row["question"],
                "context": list(context),
                "answer": row["answer"],
                "claim": row.get("claim") or "",
                "supported": supported,
                "rationale": " ".join(why) or default,
            }
        )
    return examples


def few_shot_examples(reference: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A disagreement export version as few-shot examples: ``(reference as pinned, examples)``; tuning split only."""
    campaign = campaign_get(str(reference["campaign"]))
    try:
        version = int(reference["export"])
    except (TypeError, ValueError):
        raise TunedPromptRefused(f"the export is a version number, got {reference['export']!r}") from None
    record = campaign_export(campaign, version)
    if record is None:
        raise TunedPromptRefused(f"campaign {campaign.name!r} has no export v{version}")
    if record.kind != ExportRecord.Kind.DISAGREEMENTS:
        raise TunedPromptRefused(
            f"export v{version} of {campaign.name} is a label export: few-shot examples come from a disagreement "
            "export (the tuning split only)"
        )
    if record.heldout_items or Item.objects.filter(pk__in=record.item_ids, split=Item.Split.HELDOUT).exists():
        raise TunedPromptRefused(f"export v{version} of {campaign.name} holds held-out items: it cannot tune a judge")
    examples = _export_examples(record)
    pinned = {
        "campaign": campaign.name,
        "export": version,
        "format": record.fmt,
        "examples": len(examples),
        "content_sha256": hashlib.sha256(record.content.encode()).hexdigest(),
    }
    return pinned, examples


def _check_no_overlap(campaign: Campaign, examples: list[dict[str, Any]]) -> None:
    """Refuse examples that are (the same row and claim as) one of the campaign's held-out items."""
    ids = [e["item_id"] for e in examples if e.get("item_id")]
    pairs = set(Item.objects.filter(pk__in=ids).values_list("row_id", "claim_index"))
    held = Item.objects.filter(campaign=campaign, split=Item.Split.HELDOUT)
    overlap = [p for p in held.values_list("row_id", "claim_index") if p in pairs]
    if overlap:
        raise TunedPromptRefused(
            f"{len(overlap)} few-shot example(s) are held-out items of {campaign.name}: a prompt tuned on them "
            "would be measured on them. Pick an export of another campaign's tuning split"
        )


@dataclass(frozen=True, kw_only=True)
class TunedPrompt:
    """What to try: the campaign, the config the new one derives from, the export and the edited prompt."""

    campaign: Campaign
    base: JudgeConfig
    name: str
    export: int | None = None
    export_campaign: str | None = None
    prompt: str | None = None
    claims: str = "keep"

    @property
    def changes(self) -> dict[str, Any]:
        changes: dict[str, Any] = {}
        if self.prompt is not None:
            changes["prompt"] = self.prompt
        if self.export is not None:
            changes["few_shot"] = {"campaign": self.export_campaign or self.campaign.name, "export": self.export}
        return changes


def tuned_prompt_check(plan: TunedPrompt) -> None:
    """Refuse what cannot be tried (before a job exists): the held-out split looked at or spent, leakage, bad prompt."""
    campaign = plan.campaign
    check_name(plan.name, what="judge config")
    check_runnable(plan.base)
    if plan.claims not in ("keep", "split"):
        raise TunedPromptRefused(f"claims must be 'keep' or 'split', got {plan.claims!r}")
    if not Item.objects.filter(campaign=campaign, split=Item.Split.HELDOUT).exists():
        raise TunedPromptRefused(f"campaign {campaign.name} holds no held-out items to measure a tuned prompt on")
    spent = heldout_spent(campaign)
    if spent is not None:
        raise TunedPromptRefused(spent.message)
    viewed = RemeasurementView.objects.filter(campaign=campaign).order_by("viewed_at").first()
    if viewed is not None:
        raise TunedPromptRefused(
            f"a re-measurement on {campaign.name}'s held-out split was looked at ({viewed.viewed_at:%Y-%m-%d %H:%M}): "
            "trying another prompt on the same items would tune on them. Sample a fresh held-out set from the judge "
            "report and try the prompt there"
        )
    if plan.export_campaign and plan.export_campaign not in {c.name for c in _campaign_line(campaign)}:
        raise TunedPromptRefused(
            f"export campaign {plan.export_campaign!r} is neither {campaign.name} nor a campaign it is a fresh "
            "held-out sample of"
        )
    if not plan.changes:
        raise TunedPromptRefused("change the prompt or pick few-shot examples: the same judge needs no re-measurement")
    config = normalize_judge_config(derived_config(plan.base, plan.changes), display=f"judge config {plan.name}")
    _check_no_overlap(campaign, config["few_shot_examples"])
    run_judge = campaign.run.judge_config
    if run_judge is not None and run_judge.config_hash == config["config_hash"]:
        raise TunedPromptRefused("that is the run's own judge config: change the prompt or the examples")


def _items(campaign: Campaign) -> Iterator[list[Item]]:
    items = (
        Item.objects.filter(campaign=campaign, split=Item.Split.HELDOUT)
        .select_related("row__question")
        .order_by("position")
    )
    batch: list[Item] = []
    for item in items.iterator(chunk_size=256):
        batch.append(item)
        if len(batch) == 256:
            yield batch
            batch = []
    if batch:
        yield batch


def _text(item: Item, claim: str = "") -> ItemText:
    """What the judge sees of a held-out item: never its labels."""
    row = item.row
    return ItemText(
        question=row.question.text,
        context=tuple(chunk["text"] for chunk in row.context_chunks),
        answer=row.answer,
        claim=claim,
    )


def _claims_of(items: list[Item], prompts: Prompts, claims: str) -> dict[int, list[str] | None]:
    """The claims to judge per item: its own claim, or the answer's claims (its own or split by the judge)."""
    out: dict[int, list[str] | None] = {}
    split_keys = {}
    for item in items:
        if item.claim_index is not None:
            claim = item.claim
            out[item.pk] = [claim["text"]] if claim else None
        elif claims == "keep":
            out[item.pk] = [c["text"] for c in item.row.claims or []]
        else:
            split_keys[item.pk] = prompts.claims(_text(item)).key
    found = cached_outputs(prompts.config.config_hash, split_keys.values())
    for pk, key in split_keys.items():
        out[pk] = list(found[key]["claims"]) if key in found else None
    return out


@dataclass(frozen=True)
class TunedPromptResult:
    config: JudgeConfig
    verdict_set: VerdictSet
    judged: int
    failed: int
    totals: dict[str, Any]

    @property
    def url(self) -> str:
        return (
            reverse("labelling:remeasure", args=[self.verdict_set.campaign.name]) + f"?verdicts={self.verdict_set.pk}"
        )

    @property
    def message(self) -> str:
        failed = f"; the judge failed on {self.failed} (no verdict)" if self.failed else ""
        return (
            f"Judge config {self.config.label} judged {self.judged} held-out item(s){failed} "
            f"({self.totals['calls']:,} calls, {self.totals['from_cache']:,} from the cache). The re-measurement is open."
        )


def tuned_prompt_try(
    plan: TunedPrompt,
    *,
    user: Any = None,
    progress: Progress = no_progress,
    should_stop: Callable[[], bool] = lambda: False,
) -> TunedPromptResult:
    """Create the tuned config, judge the held-out items with it, store its verdicts and open the re-measurement."""
    campaign = plan.campaign
    existing = JudgeConfig.objects.filter(name=plan.name).first()
    if existing is not None and existing.verdict_sets.filter(campaign=campaign).exists():
        config = existing  # a resumed job: the config was created, and its verdicts stored
    else:
        tuned_prompt_check(plan)
        config = judge_config_derived(base=plan.base, name=plan.name, changes=plan.changes, user=user).config
    prompts = Prompts(config)

    def split() -> Iterator[Any]:
        for items in _items(campaign):
            for item in items:
                if item.claim_index is None and not item.row.declined and item.row.answer.strip():
                    yield prompts.claims(_text(item))

    def verdicts() -> Iterator[Any]:
        for items in _items(campaign):
            texts = _claims_of(items, prompts, plan.claims)
            for item in items:
                for text in texts[item.pk] or []:
                    yield prompts.verdict(_text(item, text))

    phases: list[tuple[str, Callable[[], Iterator[Any]]]] = []
    if plan.claims == "split" and campaign.unit == Campaign.Unit.ANSWER:
        phases.append(("splitting held-out answers into claims", split))
    phases.append(("judging held-out items", verdicts))
    outcome = judge_calls(config, phases, progress=progress, should_stop=should_stop)

    found: list[Verdict] = []
    failed = 0
    for items in _items(campaign):
        texts = _claims_of(items, prompts, plan.claims)
        keys = {
            (item.pk, i): prompts.verdict(_text(item, t)).key
            for item in items
            for i, t in enumerate(texts[item.pk] or [])
        }
        answers = cached_outputs(config.config_hash, keys.values())
        for item in items:
            claim_keys = [keys[(item.pk, i)] for i in range(len(texts[item.pk] or []))]
            got = [answers.get(k) for k in claim_keys]
            if texts[item.pk] is None or not got or any(a is None for a in got):
                failed += 1
                continue
            supported = all(a["supported"] for a in got)
            why = " ".join(a.get("rationale", "") for a in got if not a["supported"] or len(got) == 1)
            found.append(Verdict(item=item, supported=supported, rationale=why.strip()))
    if not found:
        raise TunedPromptRefused(
            f"the judge answered on no held-out item ({failed} failed: {next(iter(outcome.failures.values()), 'no answer')})"
        )
    digest = hashlib.sha256(json.dumps([config.config_hash, [(v.item_id, v.supported) for v in found]]).encode())
    with transaction.atomic():
        verdict_set, created = VerdictSet.objects.get_or_create(
            campaign=campaign,
            judge_config=config,
            defaults={
                "source_name": "judged in the tool",
                "source_hash": digest.hexdigest(),
                "created_by": user if getattr(user, "pk", None) else None,
            },
        )
        if created:
            for verdict in found:
                verdict.verdict_set = verdict_set
            Verdict.objects.bulk_create(found)
        if not RemeasurementView.objects.filter(verdict_set=verdict_set).exists():
            RemeasurementView.objects.create(
                campaign=campaign, verdict_set=verdict_set, viewed_by=user if getattr(user, "pk", None) else None
            )
    return TunedPromptResult(config, verdict_set, len(found), failed, outcome.totals(config.price or {}))
