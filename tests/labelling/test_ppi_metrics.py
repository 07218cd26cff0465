"""Campaigns on any judge metric feed the judge report's prediction-powered estimate of that metric: an ordinal
1-5 relevance campaign gives people's mean score on the scale (the judge's score on every answer rectified by
people's), and its failure class the corrected pass rate; a binary campaign on a judge score its pass rate."""

from __future__ import annotations

import pytest

from labelstudio_lite.labelling.services.campaigns import campaign_create
from labelstudio_lite.labelling.services.judge_report import judge_report
from labelstudio_lite.labelling.services.label_sets import label_set
from tests import factories

N = 90


def judge_score(i: int) -> int:
    return 1 + i % 5  # the judge's relevance score, 1..5 in turn


def people_score(i: int) -> int:
    return max(1, judge_score(i) - (1 if i % 3 == 0 else 0))  # people score a third of the answers one lower


@pytest.fixture
def relevance_run(db, tmp_path):
    questions = [
        {"id": f"r{i:03d}", "question": f"Question {i}?", "type": "a" if i % 2 else "b", "gold": [{"doc": f"d{i}"}]}
        for i in range(N)
    ]
    factories.make_eval_set(folder=tmp_path, questions=questions, name="rel")
    rows = [
        {
            "id": f"r{i:03d}",
            "retrieved": [f"d{i}"],
            "context_ids": [f"d{i}"],
            "answer": f"Answer {i}.",
            "scores": {"answer_relevance": judge_score(i)},
        }
        for i in range(N)
    ]
    return factories.make_run(folder=tmp_path, rows=rows, evalset="rel", name="rel-run", judge_config=factories.JUDGE)


def ordinal(run, annotator, owner, *, size: int):
    campaign = campaign_create(
        run=run,
        name=f"relevance-{size}",
        unit="answer",
        size=size,
        heldout_fraction=0.0,
        annotators=[annotator],
        user=owner,
        labels=label_set(metric="answer_relevance", scale="ordinal", scale_min=1, scale_max=5, fail_at=2),
    )
    factories.label_items(
        campaign=campaign, user=annotator, value=lambda item: str(people_score(int(item.row.question.qid[1:])))
    )
    return campaign


def test_an_ordinal_campaign_with_every_answer_labelled_gives_peoples_mean_score_and_pass_rate_exactly(
    relevance_run, annotator, owner
):
    report = judge_report(ordinal(relevance_run, annotator, owner, size=N))
    people = [people_score(i) for i in range(N)]
    assert report.mean_score.estimate == pytest.approx(sum(people) / N)
    assert report.mean_score.labels == N
    assert report.corrected.ppi.estimate == pytest.approx(sum(1 for p in people if p > 2) / N)
    assert report.corrected.used == "prediction-powered"
    assert report.as_dict()["mean_score"]["estimate"] == pytest.approx(sum(people) / N)


def test_a_sample_of_an_ordinal_campaign_tunes_the_judge_in_and_covers_peoples_mean(relevance_run, annotator, owner):
    report = judge_report(ordinal(relevance_run, annotator, owner, size=40))
    m = report.mean_score
    truth = sum(people_score(i) for i in range(N)) / N
    assert m.low <= truth <= m.high
    assert m.method == "ppi++"  # within a verdict stratum the judge's score varies, and people follow it
    assert m.high - m.low < m.labels_high - m.labels_low  # narrower than the labels alone
    assert m.worth > 1


def test_a_binary_campaign_on_a_judge_score_feeds_its_corrected_pass_rate(relevance_run, annotator, owner):
    campaign = campaign_create(
        run=relevance_run,
        name="relevance-binary",
        unit="answer",
        size=N,
        heldout_fraction=0.0,
        annotators=[annotator],
        user=owner,
        labels=label_set(metric="answer_relevance", judge_pass_at=3),
    )
    factories.label_items(
        campaign=campaign,
        user=annotator,
        value=lambda item: factories.word(people_score(int(item.row.question.qid[1:])) >= 3),
    )
    report = judge_report(campaign)
    assert report.metric == "answer_relevance" and report.mean_score is None
    assert report.corrected.ppi.estimate == pytest.approx(sum(1 for i in range(N) if people_score(i) >= 3) / N)
    assert report.corrected.raw == pytest.approx(sum(1 for i in range(N) if judge_score(i) >= 3) / N)
