"""TREC as trec_eval users expect it: the usual extensions, several cut-offs in one import (rr@k
stored), run topics missing from the qrels skipped and counted, SGML topics, linear gain by default,
an explicit tie order; agreement with trec_eval's own expected output at every cut-off it reports."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalcore.models import Question, Row
from evalcore.services.evalsets import evalset_import
from evalcore.services.problems import ProblemCollector
from evalcore.services.runs import run_import
from evalcore.services.trec import read_topics, read_trec_run

from .conftest import refused
from .test_formats import TREC, trec_expected

pytestmark = pytest.mark.django_db

CUTOFFS = [5, 10, 15, 20, 30, 100, 200, 500, 1000]
needs_trec_data = pytest.mark.skipif(not TREC.is_dir(), reason=f"trec_eval test data not found at {TREC}")


@needs_trec_data
def test_one_import_at_every_cut_off_agrees_with_trec_eval_per_topic_and_on_the_means(tmp_path):
    evalset_import(path=TREC / "qrels.test", name="trec")
    run_file = tmp_path / "results.res"  # the usual extension: no --format needed
    shutil.copy(TREC / "results.test", run_file)
    result = run_import(path=run_file, evalset="trec", name="std", cutoffs=CUTOFFS)
    run = result.run
    assert run.gain == "linear" and run.k == 5 and "linear gain" in result.message
    assert run.summary["cutoffs"] == CUTOFFS
    expected = trec_expected()
    checked = 0
    for topic in ("301", "302", "303"):
        scores = Row.objects.get(run=run, question__qid=topic).scores
        for c in CUTOFFS:
            for ours, theirs in (
                (f"recall@{c}", f"recall_{c}"),
                (f"precision@{c}", f"P_{c}"),
                (f"ndcg@{c}", f"ndcg_cut_{c}"),
            ):
                assert scores[ours] == pytest.approx(expected[topic][theirs], abs=5e-5), (topic, ours)
                checked += 1
        assert scores["rr"] == pytest.approx(expected[topic]["recip_rank"], abs=5e-5)
        assert scores["rr@1000"] == pytest.approx(expected[topic]["recip_rank"], abs=5e-5)  # 500 retrieved a topic
        assert {f"rr@{c}" for c in CUTOFFS} <= set(scores)
    means = run.summary["slices"]["all"]["metrics"]
    for c in CUTOFFS:
        for ours, theirs in (
            (f"recall@{c}", f"recall_{c}"),
            (f"precision@{c}", f"P_{c}"),
            (f"ndcg@{c}", f"ndcg_cut_{c}"),
        ):
            assert means[ours]["mean"] == pytest.approx(expected["all"][theirs], abs=5e-5), ours
    assert checked == 3 * 3 * len(CUTOFFS)


@needs_trec_data
def test_choosing_exponential_gain_for_a_trec_run_says_it_differs_from_trec_eval(tmp_path):
    evalset_import(path=TREC / "qrels.test", name="trec")
    result = run_import(
        path=TREC / "results.test", evalset="trec", name="exp", fmt="trec-run", k=10, gain="exponential"
    )
    assert result.run.gain == "exponential"
    assert "trec_eval uses linear gain" in result.message


def write_qrels(tmp_path) -> Path:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 docA 1\n1 0 docB 0\n2 0 docZ 1\n")
    evalset_import(path=qrels, name="tiny", fmt="trec-qrels")
    return qrels


def test_run_topics_missing_from_the_qrels_are_skipped_and_counted_as_trec_eval_does(tmp_path):
    write_qrels(tmp_path)
    run = tmp_path / "run.trec"
    run.write_text("1 Q0 docA 1 0.9 sys\n2 Q0 docZ 1 0.8 sys\n7 Q0 docQ 1 0.5 sys\n8 Q0 docQ 1 0.5 sys\n")
    result = run_import(path=run, evalset="tiny", name="r", k=10)
    assert result.run.row_count == 2
    assert "Skipped 2 run topic(s) not in tiny v1 (as trec_eval does): 7, 8." in result.message


def test_run_topics_missing_from_the_qrels_can_refuse_the_file_instead(tmp_path):
    write_qrels(tmp_path)
    run = tmp_path / "run.trec"
    run.write_text("1 Q0 docA 1 0.9 sys\n7 Q0 docQ 1 0.5 sys\n")
    refused(
        lambda: run_import(path=run, evalset="tiny", name="r", k=10, missing_topics="fail"),
        file="run.trec",
        line=2,
        field="id",
        says="question '7' is not in tiny v1",
    )


RUN_WITH_TIES = "1 Q0 docB 1 0.5 sys\n1 Q0 docC 2 0.5 sys\n1 Q0 docA 3 0.5 sys\n1 Q0 docD 4 0.9 sys\n"


@pytest.mark.parametrize(
    ("ties", "order"),
    [
        ("docno-desc", ["docD", "docC", "docB", "docA"]),  # trec_eval
        ("docno-asc", ["docD", "docA", "docB", "docC"]),  # ir_measures' RR
        ("file", ["docD", "docB", "docC", "docA"]),
    ],
)
def test_the_tie_order_is_an_explicit_option(tmp_path, ties, order):
    path = tmp_path / "run.txt"
    path.write_text(RUN_WITH_TIES)
    problems = ProblemCollector("run.txt")
    (record,) = read_trec_run(path, "run.txt", problems, ties=ties)
    assert record.data["retrieved"] == order and not problems


def test_the_tie_order_changes_rr_and_is_part_of_what_makes_a_run_the_same_import(tmp_path):
    write_qrels(tmp_path)
    path = tmp_path / "run.res"
    path.write_text(RUN_WITH_TIES)
    desc = run_import(path=path, evalset="tiny", name="desc", k=3).run
    asc = run_import(path=path, evalset="tiny", name="asc", k=3, ties="docno-asc").run
    assert Row.objects.get(run=desc, question__qid="1").scores["rr"] == pytest.approx(1 / 4)
    assert Row.objects.get(run=asc, question__qid="1").scores["rr"] == pytest.approx(1 / 2)


SGML = """<top>
<num> Number: 301
<title> International Organized Crime

<desc> Description:
Identify organizations that participate in international criminal activity.

<narr> Narrative:
A relevant document must as a minimum identify the organization.
</top>

<top>
<num> Number: 302
<title> Poliomyelitis and Post-Polio
<desc> Description:
Is the disease of Poliomyelitis (polio) under control in the world?
</top>
"""


def test_sgml_topic_files_give_the_questions_their_titles(tmp_path):
    topics = tmp_path / "topics.301-302.txt"
    topics.write_text(SGML)
    assert read_topics(topics) == {"301": "International Organized Crime", "302": "Poliomyelitis and Post-Polio"}
    qrels = tmp_path / "qrels.robust"
    qrels.write_text("301 0 FBIS3-10082 1\n302 0 FBIS3-10169 0\n")
    version = evalset_import(path=qrels, name="robust", fmt="trec-qrels", topics_path=topics).version
    assert Question.objects.get(version=version, qid="302").text == "Poliomyelitis and Post-Polio"


def test_an_sgml_topic_without_a_title_is_refused_with_its_line(tmp_path):
    topics = tmp_path / "topics.txt"
    topics.write_text("<top>\n<num> Number: 301\n<title> Crime\n</top>\n\n<top>\n<num> Number: 302\n<desc> x\n</top>\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("301 0 d 1\n")
    refused(
        lambda: evalset_import(path=qrels, name="robust", fmt="trec-qrels", topics_path=topics),
        file="topics.txt",
        line=6,
        field="title",
        says="needs a <num> and a <title>",
    )


def test_the_api_and_the_upload_form_take_the_trec_options(tmp_path, owner_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    write_qrels(tmp_path)
    run = b"1 Q0 docB 1 0.5 sys\n1 Q0 docA 2 0.5 sys\n7 Q0 docQ 1 0.5 sys\n"
    response = owner_client.post(
        "/api/runs/import/",
        {
            "file": SimpleUploadedFile("bm25.run", run),
            "evalset": "tiny",
            "name": "api",
            "cutoffs": [1, 2],
            "ties": "docno-asc",
        },
    )
    assert response.status_code == 202, response.content
    job = owner_client.get(response["Location"]).json()
    assert job["status"] == "succeeded" and "Skipped 1 run topic(s)" in job["result"]["message"]
    scores = Row.objects.get(run__name="api", question__qid="1").scores
    assert scores["rr@1"] == 1.0 and scores["recall@2"] == 1.0  # docno-asc puts docA first
    response = owner_client.post(
        "/runs/",
        {
            "file": SimpleUploadedFile("bm25.run", run),
            "evalset": "tiny",
            "name": "form",
            "cutoffs": "1,2",
            "ties": "docno-desc",
            "missing_topics": "fail",
        },
    )
    assert response.status_code == 302
    assert "question &#x27;7&#x27; is not in tiny v1" in owner_client.get(response["Location"]).content.decode()


def test_a_trec_run_imported_at_one_k_keeps_rr_at_k_too(tmp_path):
    write_qrels(tmp_path)
    path = tmp_path / "run.res"
    path.write_text(RUN_WITH_TIES)
    run = run_import(path=path, evalset="tiny", name="k2", k=2).run
    scores = Row.objects.get(run=run, question__qid="1").scores
    assert scores["rr@2"] == 0.0 and scores["rr"] == pytest.approx(1 / 4)


def test_the_api_and_the_upload_form_take_a_topics_file_with_the_qrels(owner_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    qrels = b"301 0 FBIS3-10082 1\n302 0 FBIS3-10169 0\n"
    for url, name in (("/api/evalsets/import/", "robust-api"), ("/evalsets/", "robust-form")):
        response = owner_client.post(
            url,
            {
                "file": SimpleUploadedFile("qrels.robust", qrels),
                "topics": SimpleUploadedFile("topics.txt", SGML.encode()),
                "name": name,
                "format": "trec-qrels",
            },
        )
        assert response.status_code in (202, 302), response.content
        question = Question.objects.get(version__eval_set__name=name, qid="301")
        assert question.text == "International Organized Crime"
