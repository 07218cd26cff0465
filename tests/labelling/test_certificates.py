"""Judge certificates: each state, append-only rows that a newer measurement supersedes, staleness on a
guideline or prompt change, the gate's judge policy per metric; an ordinal campaign's weighted kappa."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from evalcore.services.judge_fitness import judge_certificates, judge_validation
from labelstudio_lite.labelling.models import Campaign, Certificate, Label
from labelstudio_lite.labelling.services.campaigns import campaign_create, campaign_new_guideline
from labelstudio_lite.labelling.services.judge_report import judge_report
from labelstudio_lite.labelling.services.label_sets import LabelSetError, label_set
from tests import factories


def every_fourth_unsupported(i: int, claims: int) -> list[bool]:
    return [i % 4 != 0] * claims


def judged_run(tmp_path, n: int, name: str = "base"):
    return factories.make_marked_run(folder=tmp_path / name, n=n, verdicts=every_fourth_unsupported, name=name)


def label_all(campaign, user, *, wrong: int = 0):
    """People agree with the judge, except on the first ``wrong`` items it passed (people fail them)."""
    passed = iter(range(10**6))

    def value(item):
        if not item.judge_supported:
            return "unsupported"
        return "unsupported" if next(passed) < wrong else "supported"

    factories.label_items(campaign=campaign, user=user, value=value)


@pytest.mark.parametrize(
    ("n", "wrong", "state"),
    [(120, 0, "trusted"), (120, 30, "untrusted"), (40, 0, "inconclusive")],
)
def test_a_judge_reads_trusted_untrusted_or_inconclusive_on_its_interval_bounds(
    tmp_path, owner, annotator, n, wrong, state
):
    run = judged_run(tmp_path, n)
    campaign = factories.make_campaign(run=run, name="c", annotators=[annotator], user=owner)
    label_all(campaign, annotator, wrong=wrong)

    certificate = judge_report(campaign).certificate
    assert certificate["state"] == state
    if state == "inconclusive":  # 0 of 10 missed: the miss rate may still be up to about 28 %
        assert certificate["miss_rate"]["high"] > 0.15 and certificate["more_failure_labels"] > 0
        assert (
            f"label about {certificate['more_failure_labels']} more unsupported answers" in certificate["reasons"][-1]
        )
    else:
        assert certificate["more_failure_labels"] is None
        validation = judge_validation(run.judge_config)
        assert validation.status == ("fit" if state == "trusted" else "not_fit")
        assert validation.fit is (state == "trusted")
        assert Certificate.objects.get(slice="").state == state


def test_certificates_are_kept_and_a_newer_measurement_supersedes_the_old(tmp_path, owner, annotator):
    run = judged_run(tmp_path, 120)
    campaign = factories.make_campaign(run=run, name="c", annotators=[annotator], user=owner)
    label_all(campaign, annotator)
    judge_validation(run.judge_config)
    judge_validation(run.judge_config)  # the same measurement again is the same row
    assert Certificate.objects.filter(slice="").count() == 1
    first = Certificate.objects.get(slice="")

    label = Label.objects.filter(item__judge_supported=True).first()
    from labelstudio_lite.labelling.services.assignment import change_label

    change_label(campaign=campaign, user=annotator, label_id=label.pk, value="unsupported")
    judge_validation(run.judge_config)
    assert Certificate.objects.filter(slice="").count() == 2
    newest = judge_certificates(run.judge_config)
    overall = [c for c in newest if not c["slice"]]
    assert [c["superseded"] for c in overall] == [False, True] and overall[1]["id"] == first.pk
    assert Certificate.objects.get(pk=first.pk).items == first.items  # the old row is as it was


def test_a_new_guideline_makes_the_certificate_stale_and_the_gate_stops_trusting_it(tmp_path, owner, annotator):
    run = judged_run(tmp_path, 120)
    campaign = factories.make_campaign(run=run, name="c", annotators=[annotator], user=owner, guidance="v1 text")
    label_all(campaign, annotator)
    assert judge_validation(run.judge_config).fit

    campaign_new_guideline(campaign=campaign, text="count partial answers as unsupported", user=owner)
    validation = judge_validation(run.judge_config)
    assert validation.status == "fit" and not validation.fit and validation.outdated
    assert "the guideline of campaign c changed (v1 → v2) after these labels were given" in validation.stale
    assert "stale: the guideline" in validation.reason


def test_a_judge_whose_prompt_changed_is_told_its_earlier_certificate_is_stale(tmp_path, owner, annotator):
    run = judged_run(tmp_path, 120)
    campaign = factories.make_campaign(run=run, name="c", annotators=[annotator], user=owner)
    label_all(campaign, annotator)
    assert judge_validation(run.judge_config).fit
    rows = [factories.ok_row(factories.qid_of(i)) for i in range(120)]
    changed = factories.make_run(
        folder=tmp_path / "base",
        rows=rows,
        evalset="lab",
        name="new-prompt",
        judge_config={**factories.JUDGE, "prompt": "v2"},
    )

    validation = judge_validation(changed.judge_config)
    assert validation.status == "unvalidated" and not validation.fit
    assert "is stale for it: the prompt changed" in validation.why_not


def test_an_answer_relevance_campaign_on_a_1_to_5_scale_reports_weighted_kappa_cross_checked(
    small_run, owner, annotator
):
    campaign = campaign_create(
        run=small_run,
        name="relevance",
        unit="answer",
        size=100,
        heldout_fraction=0.0,
        annotators=[annotator],
        user=owner,
        labels=label_set(metric="answer_relevance", scale="ordinal", scale_min=1, scale_max=5, fail_at=2),
    )
    assert campaign.judge_question.startswith("On a scale of 1 to 5, does the answer address the question")
    people = {}

    def score(item):
        people[item.pk] = [1, 2, 3, 4, 5, 3][item.position % 6]
        return str(people[item.pk])

    factories.label_items(campaign=campaign, user=annotator, value=score)
    assert set(Label.objects.values_list("score", flat=True)) == {1, 2, 3, 4, 5}
    assert Label.objects.filter(score__lte=2, value="unsupported").count() == Label.objects.filter(score__lte=2).count()

    report = judge_report(campaign).as_dict()
    judge = {item.pk: int(item.judge_score) for item in campaign.items.all()}
    assert set(judge.values()) == {3}  # 2.718 on the scale as it is
    ids = sorted(people)
    for weights in ("linear", "quadratic"):
        expected = cohen_kappa_score(
            [people[i] for i in ids], [judge[i] for i in ids], weights=weights, labels=[1, 2, 3, 4, 5]
        )
        assert report["agreement"]["ordinal"][weights]["estimate"] == pytest.approx(expected, abs=1e-12)
    failures = sum(1 for v in people.values() if v <= 2)
    assert report["overall"]["failures"] == failures and report["overall"]["missed"] == failures  # the judge passes all
    assert report["certificate"]["state"] in ("untrusted", "inconclusive")
    assert report["label_set"]["words"] == "scores 1–5; 1–2 is the failure class"


def test_a_label_set_is_checked_with_its_reason():
    with pytest.raises(LabelSetError, match="scores at or below it fail"):
        label_set(metric="answer_relevance", scale="ordinal", scale_min=1, scale_max=5, fail_at=5)
    with pytest.raises(LabelSetError, match="no scale or threshold"):
        label_set(metric="answer_relevance", scale="binary", fail_at=2)
    assert (label_set(metric="answer_relevancy").pass_word, label_set(metric="correctness").shows) == (
        "Relevant",
        "reference",
    )


def test_an_eval_owner_creates_a_1_to_5_relevance_campaign_from_the_form_and_the_command(owner_client, small_run):
    response = owner_client.post(
        reverse("labelling:campaigns"),
        {
            "name": "relevance-form",
            "run": small_run.pk,
            "unit": "answer",
            "size": 10,
            "heldout_fraction": 0.3,
            "overlap": 1,
            "seed": 3,
            "guidance": "5: answers exactly what was asked.",
            "metric": "answer_relevance",
            "scale": "ordinal",
            "scale_min": 1,
            "scale_max": 5,
            "fail_at": 2,
        },
    )
    assert response.status_code == 302
    campaign = Campaign.objects.get(name="relevance-form")
    assert (campaign.metric, campaign.scale, campaign.scale_min, campaign.scale_max, campaign.fail_at) == (
        "answer_relevance",
        "ordinal",
        1,
        5,
        2.0,
    )
    assert campaign.shows == "question" and campaign.guideline.text == "5: answers exactly what was asked."
    assert set(campaign.items.values_list("judge_score", flat=True)) == {3.0}

    call_command(
        "create_campaign",
        *("--run", small_run.name, "--name", "relevance-cli", "--unit", "answer", "--size", "10"),
        *("--metric", "answer_relevance", "--scale", "ordinal", "--scale-min", "1", "--scale-max", "5"),
        *("--fail-at", "2"),
        stdout=StringIO(),
    )
    assert Campaign.objects.get(name="relevance-cli").scale_words == "scores 1–5; 1–2 is the failure class"
    with pytest.raises(CommandError, match="scores at or below it fail"):
        call_command(
            "create_campaign",
            *("--run", small_run.name, "--name", "bad", "--unit", "answer", "--size", "10", "--scale", "ordinal"),
            *("--scale-min", "1", "--scale-max", "5", "--fail-at", "7"),
            stdout=StringIO(),
        )


def test_a_bias_battery_that_blocks_makes_a_trusted_judge_untrusted_at_the_gate_in_words(tmp_path, owner, annotator):
    from labelstudio_lite.labelling.models import BiasBattery

    run = judged_run(tmp_path, 120)
    campaign = factories.make_campaign(run=run, name="c", annotators=[annotator], user=owner)
    label_all(campaign, annotator)
    assert judge_validation(run.judge_config).fit  # people agree with the judge: trusted

    def battery(blocks: bool, key: str) -> BiasBattery:  # as bias_battery_run stores one
        words = "flips 12 % of unsupported claims to supported when the answer ends with an expert's assurance"
        finding = {"probe": "authority@v1", "direction": "to_supported", "estimate": 0.12, "blocks": blocks,
                   "words": words}  # fmt: skip
        return BiasBattery.objects.create(
            campaign=campaign, judge_config=run.judge_config, probes=[], bar=0.05, items=60, claims=120,
            findings=[finding], blocks_gating=blocks, source_hash=key * 64,
            verdict=f"untrusted for gating: {words}" if blocks else "no probe sways the judge beyond its own noise",
        )  # fmt: skip

    battery(False, "a")
    assert judge_validation(run.judge_config).fit  # a clear battery changes nothing
    battery(True, "b")
    validation = judge_validation(run.judge_config)
    assert validation.status == "not_fit" and not validation.fit
    assert validation.reasons[-1].startswith("bias: flips 12 % of unsupported claims to supported")
    assert "is untrusted: " in validation.reason and "bias: flips 12 %" in validation.reason
    assert Certificate.objects.get(slice="").state == "trusted"  # the stored certificate never changes
