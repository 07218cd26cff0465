"""Every case of the bad-input corpus (``bad_inputs.py``), sent through every door: the command, the
upload page and the API. Each door must refuse it with the same words (the file, the line, the limit
and its variable), write nothing, keep no upload, and show no traceback or server path."""

from __future__ import annotations

import codecs
import io
import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from evalcore.models import EvalSetVersion, Job, Run
from tests.factories import QUESTIONS, ok_row

from .bad_inputs import CASES, Case, lines, question
from .conftest import db_counts

pytestmark = pytest.mark.django_db
DOORS = ("command", "upload", "api")


def left_uploads() -> list[Path]:
    root = Path(settings.MEDIA_ROOT) / "uploads"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def send(door: str, case: Case, path: Path, client) -> tuple[int, str]:
    """Send the file through a door; return (0 for a refusal, or 1 when accepted, and what the user is told)."""
    rows = case.holds == "rows"
    options = {"name": "corpus", **({"evalset": "support", "k": "3"} if rows else {})}
    if case.format:
        options["format"] = case.format
    if door == "command":
        command = "import_run" if rows else "import_evalset"
        args = [str(path)] + [a for k, v in options.items() for a in (f"--{k}", v)] + ["--quiet"]
        out = io.StringIO()
        try:
            call_command(command, *args, stdout=out, stderr=io.StringIO())
        except CommandError as error:
            return 0, str(error)
        return 1, out.getvalue()
    upload = SimpleUploadedFile(case.file, path.read_bytes())
    if door == "upload":
        response = client.post("/runs/" if rows else "/evalsets/", {**options, "file": upload, "gain": "exponential"})
        if response.status_code == 400:
            return 0, response.content.decode()
        assert response.status_code == 302, response.status_code
        job = Job.objects.latest("pk")
        page = client.get(response["Location"]).content.decode()
        return (0 if job.status == Job.Status.FAILED else 1), job.error + "\n" + page
    response = client.post("/api/runs/import/" if rows else "/api/evalsets/import/", {**options, "file": upload})
    if response.status_code == 400:
        return 0, json.dumps(response.json())
    assert response.status_code == 202, response.content
    job = client.get(response["Location"]).json()
    return (0 if job["status"] == "failed" else 1), job["error"] + "\n" + json.dumps(job["result"])


@pytest.fixture
def support(db, tmp_path):
    from evalcore.services.evalsets import evalset_import
    from tests.files import write_jsonl

    return evalset_import(path=write_jsonl(tmp_path / "support.jsonl", QUESTIONS), name="support").version


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_bad_input_is_refused_the_same_way_at_every_door_and_changes_nothing(
    case, door, support, owner_client, settings, tmp_path
):
    for name, value in case.limits.items():
        setattr(settings, name, value)
    path = tmp_path / "sent" / case.file
    path.parent.mkdir()
    path.write_bytes(case.data())
    before = db_counts()

    accepted, told = send(door, case, path, owner_client)

    assert not accepted, f"{door} accepted {case.name}: {told[:500]}"
    assert case.says in told, f"{case.says!r} not in what {door} said:\n{told[:3000]}"
    if case.line is not None:
        assert f"{case.file}, line {case.line}" in told, told[:3000]
    assert db_counts() == before, "a refused import wrote something"
    assert left_uploads() == [], "a refused import kept its upload"
    assert "Traceback" not in told and str(tmp_path) not in told and str(settings.MEDIA_ROOT) not in told


@pytest.mark.parametrize("door", DOORS)
def test_every_problem_of_a_file_is_reported_with_its_own_line(door, support, owner_client, tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(
        lines(
            question(0),
            {"id": "q2"},
            '{"id": "q3", "question": ',
            {"id": "q4", "question": 4},
            "[1, 2]",
        )
        + b'{"id": "q5", "question": "Caf\xe9"}\n'
    )
    _, told = send(door, Case("mixed", "questions", "mixed.jsonl", b"", ""), path, owner_client)
    for line, says in [
        (2, "is required"),
        (3, "malformed JSON"),
        (4, "must be text"),
        (5, "JSON object"),
        (6, "UTF-8"),
    ]:
        assert f"mixed.jsonl, line {line}" in told and says in told, (line, says, told[:2000])


ACCEPTED = [
    ("a UTF-8 byte order mark in JSON Lines", "bom.jsonl", codecs.BOM_UTF8 + lines(*QUESTIONS)),
    (
        "a UTF-8 byte order mark in CSV",
        "bom.csv",
        codecs.BOM_UTF8 + b"id,question\n" + b"".join(f"{q['id']},{q['question']}\n".encode() for q in QUESTIONS),
    ),
    ("a file name of 150 characters", "q" * 150 + ".jsonl", lines(*QUESTIONS)),
    (
        "cells a spreadsheet-safe export escaped",
        "escaped.csv",
        b"id,question\n" + b"".join(f"{q['id']},'={q['question']}\n".encode() for q in QUESTIONS),
    ),
]


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize(("why", "name", "content"), ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_a_good_file_is_accepted_at_every_door(why, name, content, door, owner_client, tmp_path):
    path = tmp_path / name
    path.write_bytes(content)
    accepted, told = send(door, Case(why, "questions", name, b"", ""), path, owner_client)
    assert accepted, told[:2000]
    version = EvalSetVersion.objects.get(eval_set__name="corpus")
    texts = dict(version.questions.values_list("qid", "text"))
    expected = {q["id"]: q["question"] for q in QUESTIONS}
    if name == "escaped.csv":
        expected = {qid: "=" + text for qid, text in expected.items()}
    assert texts == expected


def test_an_upload_is_deleted_once_its_job_ends_whether_it_was_imported_or_refused(support, owner_client, tmp_path):
    """The rows are in the database once the job ends: the stored upload is of no more use (issue 15)."""
    good = SimpleUploadedFile("rows.jsonl", lines(*[ok_row(q["id"]) for q in QUESTIONS]))
    response = owner_client.post("/api/runs/import/", {"file": good, "evalset": "support", "name": "kept", "k": "3"})
    assert response.status_code == 202 and Run.objects.filter(name="kept").exists()
    assert left_uploads() == []

    bad = SimpleUploadedFile("rows.jsonl", b"{]\n")
    response = owner_client.post("/api/runs/import/", {"file": bad, "evalset": "support", "name": "bad", "k": "3"})
    assert client_job(owner_client, response)["status"] == "failed"
    assert left_uploads() == []


def client_job(client, response) -> dict:
    assert response.status_code == 202, response.content
    return client.get(response["Location"]).json()


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'{"model": "m", "temperature": NaN}', "not a finite number"),
        (b'{"model": "m", "x": ' + b"[" * 40 + b"]" * 40 + b"}", "IMPORT_MAX_DEPTH"),
        (b'{"model": "m",\n "prompt": }', "malformed JSON"),
        ('{"model": "m"}'.encode("utf-16"), "is UTF-16 text"),
        (b'{"model": "m\\u0000"}', "NUL character"),
    ],
)
def test_a_config_file_on_the_command_line_is_read_by_the_same_rules(content, says, support, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(lines(*[ok_row(q["id"]) for q in QUESTIONS]))
    config = tmp_path / "judge.json"
    config.write_bytes(content)
    before = db_counts()
    with pytest.raises(CommandError, match="judge.json") as refused:
        call_command("import_run", str(rows), "--evalset", "support", "--name", "r", "--judge-config", str(config))
    assert says in str(refused.value)
    assert db_counts() == before


def test_a_config_file_with_a_utf8_byte_order_mark_is_read(support, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(lines(*[ok_row(q["id"]) for q in QUESTIONS]))
    config = tmp_path / "judge.json"
    config.write_bytes(codecs.BOM_UTF8 + b'{"model": "m", "temperature": 0.0}')
    call_command(
        "import_run",
        str(rows),
        "--evalset",
        "support",
        "--name",
        "r",
        "--k",
        "3",
        "--judge-config",
        str(config),
        "--quiet",
        stdout=io.StringIO(),
    )
    assert Run.objects.get(name="r").judge_config.model == "m"
