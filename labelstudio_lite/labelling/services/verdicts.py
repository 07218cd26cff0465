"""Import a new judge config's verdicts on a campaign's items, for re-measurement (a re-run with a tuned prompt).

Atomic and idempotent with line-numbered errors, like every import: a line names an item of the
campaign (question_id, and claim_index in claim campaigns) and gives the verdict (supported) and
the judge's rationale. Verdicts of the run's own judge config are refused: they would re-measure
the judge against itself.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction

from evalcore.services.fields import as_bool, as_text
from evalcore.services.judge_configs import judge_config_get_or_create, normalize_judge_config
from evalcore.services.problems import ImportFailed, ImportProblem, ProblemCollector
from evalcore.services.readers import container_of, read_records

from ..models import Campaign, Item, Verdict, VerdictSet
from .item_rows import campaign_items, item_lines


@dataclass(frozen=True)
class VerdictImportResult:
    verdict_set: VerdictSet
    created: bool
    message: str


def _read_verdict(data: dict[str, Any]) -> tuple[bool, str]:
    return as_bool(data.get("supported"), "supported"), as_text(data.get("rationale"), "rationale")


def verdicts_import(
    *, campaign: Campaign, path: Path, judge_config: dict[str, Any], display_name: str | None = None, user: Any = None
) -> VerdictImportResult:
    """Import a new judge config's verdicts on the campaign's items (question_id, claim_index, supported, rationale)."""
    display = display_name or path.name
    config = normalize_judge_config(judge_config, display="judge config")
    original = campaign.run.judge_config
    if original is not None and original.config_hash == config["config_hash"]:
        raise ImportFailed(
            [
                ImportProblem(
                    display,
                    None,
                    None,
                    "these verdicts come from the run's own judge config; a re-measurement needs a different (tuned) config",
                )
            ]
        )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    existing = VerdictSet.objects.filter(campaign=campaign, judge_config__config_hash=config["config_hash"]).first()
    if existing is not None:
        if existing.source_hash == digest:
            return VerdictImportResult(
                existing, False, f"Nothing new: these verdicts of {existing.judge_config} are already imported."
            )
        raise ImportFailed(
            [
                ImportProblem(
                    display,
                    None,
                    None,
                    f"verdicts of this judge config were already imported for {campaign.name} from another file",
                )
            ]
        )
    problems = ProblemCollector(display)
    parsed: list[tuple[int, bool, str]] = []
    seen: dict[int, int] = {}
    heldout_covered = 0
    records = read_records(path, container_of(path), display, problems=problems)
    for line, item, (supported, rationale) in item_lines(
        records, campaign_items(campaign, ignore_answer_claim_index=True), _read_verdict, problems
    ):
        if item.pk in seen:
            problems.add(line, "question_id", f"this item already has a verdict on line {seen[item.pk]}")
            continue
        seen[item.pk] = line
        parsed.append((item.pk, supported, rationale))
        heldout_covered += item.split == Item.Split.HELDOUT
    problems.raise_if_any()
    if not parsed:
        raise ImportFailed([ImportProblem(display, None, None, "the file holds no verdicts")])
    with transaction.atomic():
        verdict_set = VerdictSet.objects.create(
            campaign=campaign,
            judge_config=judge_config_get_or_create(config),
            source_name=display,
            source_hash=digest,
            created_by=user if getattr(user, "pk", None) else None,
        )
        Verdict.objects.bulk_create(
            [Verdict(verdict_set=verdict_set, item_id=pk, supported=s, rationale=r) for pk, s, r in parsed]
        )
    heldout_total = Item.objects.filter(campaign=campaign, split=Item.Split.HELDOUT).count()
    return VerdictImportResult(
        verdict_set,
        True,
        (
            f"Imported {len(parsed)} verdicts of {verdict_set.judge_config} ({heldout_covered} of {heldout_total} held-out items covered)."
        ),
    )
