"""Try a tuned prompt from the judge report: few-shot examples from the tuning split's disagreements, the
held-out items judged by the fake judge, and the re-measurement opened. The held-out guard, end to end: no
held-out item's label or rationale reaches the judge, and the examples never come from the held-out split."""

from __future__ import annotations

import pytest

from evalcore.jobs.labelling_kinds import TryPromptParams, request_try_prompt
from evalcore.services.problems import UserFacingError
from labelstudio_lite.labelling.models import ExportRecord, Item, RemeasurementView, VerdictSet
from labelstudio_lite.labelling.services.assignment import next_item, submit_label
from labelstudio_lite.labelling.services.exports import disagreements_export, labels_export
from tests.factories import make_campaign

TUNED_PROMPT = "Be strict: every word of the claim must be in the context.\nContext:\n{context}\nClaim: {claim}"


def truth(item: Item) -> bool:
    """What people find: the claim is supported when the context states it (the second claim only on rows 0 and 4)."""
    return item.claim_index == 0 or item.row.question.qid in ("q0000", "q0004")


@pytest.fixture
def campaign(literal_run, owner, annotator):
    """A claim campaign over every claim, half held out; people label each with a rationale naming its split."""
    campaign = make_campaign(run=literal_run, name="claims", unit="claim", heldout_fraction=0.5, annotators=[annotator])
    while (served := next_item(campaign=campaign, user=annotator)) is not None:
        item = served.item
        why = f"{'HELDOUTWHY' if item.split == 'heldout' else 'TUNINGWHY'}-{item.pk}"
        submit_label(
            campaign=campaign,
            user=annotator,
            item_id=item.pk,
            value="supported" if truth(item) else "unsupported",
            rationale=why,
        )
    return campaign


def params(campaign, judge, export, **changes) -> TryPromptParams:
    return TryPromptParams(
        **{
            "campaign": campaign.name,
            "base_config": judge.pk,
            "name": "literal-judge-tuned",
            "export": export,
            "prompt": TUNED_PROMPT,
            **changes,
        }
    )


def test_a_tuned_prompt_judges_only_held_out_items_and_no_held_out_label_reaches_the_judge(
    campaign, judge, fake_judge, owner
):
    export = disagreements_export(campaign=campaign, fmt="jsonl", user=owner)
    assert export.heldout_items == 0 and export.item_ids  # the run's judge passed unsupported tuning claims

    job = request_try_prompt(params=params(campaign, judge, export.version), user=owner)

    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    verdict_set = VerdictSet.objects.get(pk=job.result["verdict_set"])
    held = {i.pk: i for i in Item.objects.filter(campaign=campaign, split="heldout").select_related("row__question")}
    judged = dict(verdict_set.verdicts.values_list("item_id", "supported"))
    assert set(judged) == set(held)  # every held-out item, and no tuning item
    assert judged == {pk: truth(item) for pk, item in held.items()}
    config = verdict_set.judge_config
    assert config.name == "literal-judge-tuned" and config.few_shot["export"] == export.version
    assert {e["item_id"] for e in config.few_shot_examples} == set(export.item_ids)
    assert RemeasurementView.objects.filter(verdict_set=verdict_set, viewed_by=owner).exists()
    assert job.result["url"].endswith(f"?verdicts={verdict_set.pk}")

    prompts = [r.prompt for r in fake_judge.fake.requests]
    held_claims = {item.claim["text"] for item in held.values()}
    assert len(prompts) == len(held) and all(p.rsplit("Claim: ", 1)[1] in held_claims for p in prompts)
    assert not any("HELDOUTWHY" in p for p in prompts)
    assert all("Be strict" in p for p in prompts)


def test_few_shot_examples_reach_the_judge_from_the_tuning_split_only(campaign, judge, fake_judge, owner, client):
    export = disagreements_export(campaign=campaign, fmt="jsonl", user=owner)
    seen: list[list[dict]] = []
    fake_judge.fake.on_messages = seen.append

    request_try_prompt(params=params(campaign, judge, export.version), user=owner)

    assert seen, "the judge received no request"
    sent = "\n".join(m["content"] for messages in seen for m in messages)
    assert "TUNINGWHY" in sent  # people's rationales of tuning disagreements are the few-shot answers
    assert "HELDOUTWHY" not in sent
    client.force_login(owner)
    verdict_set = VerdictSet.objects.get(campaign=campaign)
    page = client.get(f"/campaigns/{campaign.name}/remeasure/?verdicts={verdict_set.pk}")
    assert page.status_code == 200 and "held" in page.content.decode().lower()


def test_a_second_try_on_a_held_out_split_already_looked_at_is_refused(campaign, judge, fake_judge, owner):
    export = disagreements_export(campaign=campaign, fmt="jsonl", user=owner)
    request_try_prompt(params=params(campaign, judge, export.version), user=owner)
    calls = len(fake_judge.fake.requests)

    with pytest.raises(UserFacingError, match="looked at .* fresh held-out set"):
        request_try_prompt(params=params(campaign, judge, export.version, name="again", prompt=TUNED_PROMPT + "!"))
    assert len(fake_judge.fake.requests) == calls


@pytest.mark.parametrize(
    ("make_export", "says"),
    [
        (lambda c, u: labels_export(campaign=c, fmt="csv", user=u), "label export"),
        (lambda c, u: disagreements_export(campaign=c, fmt="chat", user=u), "jsonl or csv"),
    ],
)
def test_exports_that_could_leak_or_cannot_be_read_are_refused_as_few_shot(campaign, judge, owner, make_export, says):
    export = make_export(campaign, owner)

    with pytest.raises(UserFacingError, match=says):
        request_try_prompt(params=params(campaign, judge, export.version), user=owner)
    assert not VerdictSet.objects.exists() and ExportRecord.objects.count() == 1
