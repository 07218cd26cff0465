"""Bad request bodies and form fields get a 400 that names the field, never a server error, and
change nothing: deeply nested JSON, NaN and infinite numbers, NUL characters, unknown references."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalcore.models import Job
from labelstudio_lite.labelling.services.assignment import next_item
from tests.evalcore.conftest import db_counts
from tests.factories import JUDGE, QUESTIONS, make_eval_set, make_marked_run, make_run, ok_row
from tests.labelling.snapshots import labelling_state

pytestmark = pytest.mark.django_db

DEEP = "[" * 50_000 + "]" * 50_000  # past Python's recursion limit
SHALLOW_BUT_TOO_DEEP = "[" * 40 + "]" * 40  # under it, over IMPORT_MAX_DEPTH


def unchanged() -> dict:
    return {"data": db_counts(), "labelling": labelling_state(), "jobs": Job.objects.count()}


@pytest.fixture
def labelling(tmp_path, owner, annotator):
    from labelstudio_lite.labelling.services.campaigns import campaign_create

    run = make_marked_run(folder=tmp_path / "run", n=4, evalset="bodies")
    campaign = campaign_create(run=run, name="bodies", unit="answer", size=4, overlap=1, annotators=[annotator])
    held = next_item(campaign=campaign, user=annotator)
    return campaign, held.item


@pytest.fixture
def runs(tmp_path):
    make_eval_set(folder=tmp_path, questions=QUESTIONS, name="support")
    rows = [ok_row(q["id"]) for q in QUESTIONS]
    return [
        make_run(folder=tmp_path, rows=rows, evalset="support", name=name, k=3, judge_config=JUDGE)
        for name in ("base", "cand")
    ]


@pytest.mark.parametrize("body", [DEEP, SHALLOW_BUT_TOO_DEEP, '{"item_id": 1e999, "value": "supported"}'])
def test_an_annotators_label_or_skip_body_that_cannot_be_read_is_a_400(body, labelling, annotator_client):
    before = unchanged()
    for url in ("/api/label/bodies/labels/", "/api/label/bodies/skip/"):
        response = annotator_client.post(url, body, content_type="application/json")
        assert response.status_code == 400, (url, response.status_code)
        assert "JSON parse error" in response.json()["detail"]
    assert unchanged() == before


def test_an_item_id_no_database_can_hold_is_a_400_naming_it(labelling, annotator_client):
    for url in ("/api/label/bodies/labels/", "/api/label/bodies/skip/"):
        response = annotator_client.post(url, {"item_id": 2**70, "value": "supported"}, content_type="application/json")
        assert response.status_code == 400 and "item_id" in response.json(), response.content


@pytest.mark.parametrize("rationale", [0, True, ["why"], {"text": "why"}])
def test_a_rationale_that_is_not_text_is_a_400_not_stored_as_its_repr(rationale, labelling, annotator_client):
    campaign, item = labelling
    before = unchanged()
    response = annotator_client.post(
        "/api/label/bodies/labels/",
        {"item_id": item.pk, "value": "supported", "rationale": rationale},
        content_type="application/json",
    )
    assert response.status_code == 400 and response.json()["rationale"] == ["must be text"], response.content
    assert unchanged() == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (DEEP, None),
        ('{"base": "base", "candidate": "cand", "margin": 1e999}', None),
        ('{"base": "base", "candidate": "cand", "margins": {"faithfulness": NaN}}', None),
        ('{"base": "nope", "candidate": "cand"}', "base"),
        ('{"base": "base", "candidate": "#99999999"}', "candidate"),
    ],
)
def test_a_gate_body_that_is_wrong_is_a_400_and_no_job(body, field, runs, owner_client):
    before = unchanged()
    response = owner_client.post("/api/gate/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    if field:
        assert field in response.json()
    assert unchanged() == before


@pytest.mark.parametrize(
    ("data", "field", "says"),
    [
        ({"evalset": "no-such-set"}, "evalset", "there is no eval set 'no-such-set'"),
        ({"judge_config": DEEP}, "judge_config", "IMPORT_MAX_DEPTH"),
        ({"judge_config": '{"model": "m", "temperature": NaN}'}, "judge_config", "not a finite number"),
        ({"judge_config": '{"model": "m\\u0000"}'}, "judge_config", "NUL"),
        ({"system_config": '{"retriever": {"k": Infinity}}'}, "system_config", "not a finite number"),
        ({"system_config": "[1, 2]"}, "system_config", "must be a JSON object"),
        ({"name": "no spaces"}, "name", ""),
    ],
)
def test_a_run_import_request_that_is_wrong_is_a_400_naming_the_field_and_no_job(data, field, says, runs, owner_client):
    before = unchanged()
    upload = SimpleUploadedFile("rows.jsonl", b'{"id": "q1"}\n')
    response = owner_client.post(
        "/api/runs/import/", {"evalset": "support", "name": "new", "k": "3", "file": upload, **data}
    )
    assert response.status_code == 400, response.content
    assert says in " ".join(response.json()[field])
    assert unchanged() == before


def test_an_eval_set_import_that_extends_nothing_is_refused_before_any_job(db, owner_client):
    upload = SimpleUploadedFile("q.jsonl", b'{"id": "q1", "question": "Q?"}\n')
    response = owner_client.post("/api/evalsets/import/", {"name": "fresh", "extend": "true", "file": upload})
    assert response.status_code == 400 and "extend" in response.json()
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("judge_config", "says"),
    [(DEEP, "IMPORT_MAX_DEPTH"), ('{"model": "m", "temperature": -Infinity}', "not a finite number")],
)
def test_the_run_upload_form_shows_what_is_wrong_with_its_json(judge_config, says, runs, owner_client):
    before = unchanged()
    upload = SimpleUploadedFile("rows.jsonl", b'{"id": "q1"}\n')
    response = owner_client.post(
        "/runs/",
        {"evalset": "support", "name": "new", "gain": "exponential", "file": upload, "judge_config": judge_config},
    )
    assert response.status_code == 400
    assert says in response.content.decode()
    assert unchanged() == before


def test_the_verdicts_form_refuses_deep_json_with_a_message(labelling, owner_client):
    before = unchanged()
    upload = SimpleUploadedFile("v.jsonl", b'{"question_id": "q1", "supported": true}\n')
    response = owner_client.post("/campaigns/bodies/verdicts/", {"file": upload, "judge_config": DEEP})
    assert response.status_code == 400  # the form comes back with the problem, nothing stored
    assert "IMPORT_MAX_DEPTH" in response.content.decode()
    assert unchanged() == before


@pytest.mark.parametrize("margins", ["faithfulness=nan", "faithfulness=inf", "faithfulness=-1"])
def test_the_compare_form_refuses_a_margin_that_is_not_a_finite_number(margins, runs, owner_client):
    base, cand = runs
    before = unchanged()
    response = owner_client.post(
        "/compare/",
        {"base": base.pk, "candidate": cand.pk, "slice_by": "type", "margin": "0.02", "margins": margins},
    )
    assert response.status_code == 400
    assert "finite value of 0 or more" in response.content.decode()
    assert unchanged() == before


@pytest.mark.parametrize(
    "query",
    ["limit=abc", "limit=0", "limit=100000", "offset=-1", "offset=1.5", "min=nan", "max=inf", "min=abc"],
)
def test_a_malformed_list_parameter_is_a_400_not_ignored(query, runs, owner_client):
    response = owner_client.get(f"/api/runs/{runs[0].pk}/rows/?{query}")
    assert response.status_code == 400, (query, response.content)
    assert query.split("=")[0] in response.json()


def test_an_unknown_api_path_answers_json(owner_client, db):
    response = owner_client.get("/api/jobs/not-a-number/")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert json.loads(response.content) == {"detail": "Not found."}


@pytest.mark.parametrize("url", ["/api/runs/99999999999999999999/", "/api/jobs/12345678901234567890123/"])
def test_an_id_no_database_can_hold_is_a_404_not_an_overflow(url, owner_client, db):
    response = owner_client.get(url)
    assert response.status_code == 404 and response.json() == {"detail": "Not found."}


def test_the_labelling_form_refuses_an_item_id_no_database_can_hold(labelling, annotator_client):
    before = unchanged()
    response = annotator_client.post("/label/bodies/answer/", {"item_id": str(2**70), "value": "supported"})
    assert response.status_code == 200 and "could not be read" in response.content.decode()
    assert unchanged()["data"] == before["data"]
