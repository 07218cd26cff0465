"""Warnings where the report's numbers cannot carry weight: too few labelled items, few items of
the failure class, unresolved conflicts between annotators, labels still in progress. Items
without a final label are left out of every number, and the report says how many."""

from __future__ import annotations

import pytest
from django.urls import reverse
from statsmodels.stats.proportion import proportion_confint

from labelstudio_lite.labelling.models import Campaign, Item
from labelstudio_lite.labelling.services.adjudication import adjudicate
from labelstudio_lite.labelling.services.judge_report import judge_report
from tests.factories import answer_claims, import_labels, make_campaign, make_judged_run, qid_of, word

from .conftest import module_data

N = 60


def judge_of(i: int) -> bool:
    return i % 3 != 0  # 20 of 60 answers judged unsupported


def human_of(i: int) -> bool:
    """People agree with the judge except on answers 1, 4 (false passes: i % 3 == 1) and 3 (a false fail)."""
    if i in (1, 4):
        return False
    if i == 3:
        return True
    return judge_of(i)


@pytest.fixture(scope="module")
def shared(django_db_setup, django_db_blocker, tmp_path_factory):
    with module_data(django_db_blocker):
        built = make_judged_run(
            folder=tmp_path_factory.mktemp("warn"),
            claim_verdicts=[answer_claims(judge_of(i)) for i in range(N)],
            evalset="warn",
            name="warn-run",
        )
        yield built.run.pk


@pytest.fixture
def run(shared, db):
    from evalcore.models import Run

    return Run.objects.get(pk=shared)


@pytest.fixture
def make(run, owner):
    def create(name: str, overlap: int = 1) -> Campaign:
        return make_campaign(run=run, name=name, size=200, overlap=overlap, user=owner)

    return create


def labels(qids, annotator: str, value=lambda i: word(human_of(i))):
    return [(qid_of(i), None, value(i), annotator, "") for i in qids]


def test_fewer_than_200_labelled_items_is_warned_about(make, tmp_path):
    campaign = make("few")
    import_labels(folder=tmp_path, campaign=campaign, rows=labels(range(N), "r1"))

    report = judge_report(campaign).as_dict()

    assert report["overall"]["n"] == N
    assert (
        "Only 60 labelled answers: the spec asks for at least 200 per judge metric, so the intervals are wide."
        in report["warnings"]
    )


def test_few_items_of_the_failure_class_are_warned_about_with_the_miss_rates_interval(make, tmp_path):
    campaign = make("few-failures")
    import_labels(folder=tmp_path, campaign=campaign, rows=labels(range(N), "r1"))

    report = judge_report(campaign).as_dict()

    o = report["overall"]
    failures = sum(1 for i in range(N) if not human_of(i))
    assert (o["failures"], o["missed"]) == (failures, 2) and failures < 30
    low, high = proportion_confint(2, failures, method="wilson")
    expected = (
        f"Only {failures} answers that people found unsupported: the miss rate rests on few items "
        f"(95 % CI {100 * low:.0f} %–{100 * high:.0f} %)."
    )
    assert expected in report["warnings"]


def test_unresolved_conflicts_are_counted_warned_about_and_left_out(make, tmp_path):
    campaign = make("conflicts", overlap=2)
    split = {0, 2, 5, 6, 7, 8}  # people split 1-1 on six answers
    first = labels(range(N), "r1")
    second = labels(range(N), "r2", value=lambda i: word(not human_of(i) if i in split else human_of(i)))
    import_labels(folder=tmp_path, campaign=campaign, rows=first + second)

    report = judge_report(campaign).as_dict()

    assert report["statuses"] == {"agreed": N - len(split), "conflict": len(split)}
    assert report["overall"]["n"] == N - len(split)
    assert "6 answers have conflicting labels (many) and are left out until adjudicated." in report["warnings"]
    expected_failures = sum(1 for i in range(N) if i not in split and not human_of(i))
    assert report["overall"]["failures"] == expected_failures


def test_a_few_conflicts_are_reported_without_calling_them_many(make, tmp_path):
    campaign = make("one-conflict", overlap=2)
    import_labels(
        folder=tmp_path,
        campaign=campaign,
        rows=labels(range(N), "r1")
        + labels(range(N), "r2", value=lambda i: word(not human_of(i) if i == 9 else human_of(i))),
    )

    assert (
        "1 answers have conflicting labels and are left out until adjudicated."
        in judge_report(campaign).as_dict()["warnings"]
    )


def test_an_adjudicated_conflict_counts_again_with_the_owners_label(make, tmp_path, owner):
    campaign = make("adjudicated", overlap=2)
    import_labels(
        folder=tmp_path,
        campaign=campaign,
        rows=labels(range(N), "r1")
        + labels(range(N), "r2", value=lambda i: word(not human_of(i) if i == 0 else human_of(i))),
    )
    item = Item.objects.get(campaign=campaign, row__question__qid=qid_of(0))
    before = judge_report(campaign).as_dict()

    adjudicate(campaign=campaign, item_id=item.pk, value="unsupported", user=owner)  # the judge said unsupported too

    after = judge_report(campaign).as_dict()
    assert before["overall"]["n"] == N - 1
    assert after["overall"]["n"] == N
    assert after["statuses"] == {"agreed": N - 1, "adjudicated": 1}
    assert not any("conflicting" in w for w in after["warnings"])
    assert after["overall"]["failures"] == before["overall"]["failures"] + 1


def test_items_short_of_the_overlap_are_in_progress_and_left_out(make, tmp_path):
    campaign = make("in-progress", overlap=2)
    half = range(N // 2)
    import_labels(folder=tmp_path, campaign=campaign, rows=labels(range(N), "r1") + labels(half, "r2"))

    report = judge_report(campaign).as_dict()

    assert report["statuses"] == {"agreed": N // 2, "in_progress": N // 2}
    assert report["overall"]["n"] == N // 2
    assert "Labels still in progress: 30 of 60 answers have no final label yet and are left out." in report["warnings"]


def test_unlabelled_items_count_as_in_progress(make, tmp_path):
    campaign = make("unlabelled")
    import_labels(folder=tmp_path, campaign=campaign, rows=labels(range(45), "r1"))

    report = judge_report(campaign).as_dict()

    assert report["statuses"] == {"agreed": 45, "unlabelled": 15}
    assert report["overall"]["n"] == 45
    assert "Labels still in progress: 15 of 60 answers have no final label yet and are left out." in report["warnings"]


def test_cant_tell_answers_are_not_votes(make, tmp_path):
    campaign = make("cant-tell")
    import_labels(
        folder=tmp_path,
        campaign=campaign,
        rows=labels(range(N), "r1", value=lambda i: "cant_tell" if i < 4 else word(human_of(i))),
    )

    report = judge_report(campaign).as_dict()

    assert report["overall"]["n"] == N - 4
    assert report["statuses"] == {"agreed": N - 4, "unlabelled": 4}


def test_a_campaign_without_labels_says_there_is_nothing_to_judge_yet(make, owner_client):
    campaign = make("empty")

    report = judge_report(campaign).as_dict()

    assert report["overall"] == {"n": 0}
    assert report["verdict"] == {"fit": None, "line": "VERDICT: not enough labels to judge: no labelled items yet"}
    assert report["slices"] == [] and report["corrected"] is None
    assert (
        "Only 0 labelled answers: the spec asks for at least 200 per judge metric, so the intervals are wide."
        in report["warnings"]
    )
    assert "Labels still in progress: 60 of 60 answers have no final label yet and are left out." in report["warnings"]
    page = owner_client.get(reverse("labelling:report", args=[campaign.name]))
    assert page.status_code == 200
    assert "VERDICT: not enough labels to judge: no labelled items yet" in page.content.decode()


def test_when_people_found_nothing_unsupported_the_miss_rate_is_unknown(make, tmp_path):
    campaign = make("all-supported")
    import_labels(folder=tmp_path, campaign=campaign, rows=labels(range(N), "r1", value=lambda i: "supported"))

    report = judge_report(campaign).as_dict()

    assert report["overall"]["miss_sentence"] == "people found no answers unsupported"
    assert report["overall"]["miss_rate"] is None
    assert report["verdict"]["fit"] is None
    assert (
        report["verdict"]["line"]
        == "VERDICT: not enough labels to judge: people found no answers unsupported, so the miss rate is unknown"
    )


def test_the_report_page_shows_every_warning(make, tmp_path, owner_client):
    campaign = make("page-warnings", overlap=2)
    import_labels(
        folder=tmp_path,
        campaign=campaign,
        rows=labels(range(N), "r1")
        + labels(range(40), "r2", value=lambda i: word(not human_of(i) if i < 5 else human_of(i))),
    )
    report = judge_report(campaign).as_dict()
    assert len(report["warnings"]) == 4  # too few, few failures, conflicts, in progress

    page = owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()

    for warning in report["warnings"]:
        assert warning in page
