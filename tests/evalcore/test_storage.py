"""Uploads that every host reaches: stored through Django's storage API (a local folder, or S3-compatible object
storage tested against a real S3 server on loopback), read by the job from a streamed temporary copy that is
always removed, deleted once the job ends; a command line on a broker sends the file, not its path; leftovers are
cleaned by a command; an upload cut off by its client leaves no temporary file."""

from __future__ import annotations

import io
import json
import os
import socket
import time
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from evalcore.jobs.kinds import EvalSetImportParams
from evalcore.jobs.runner import job_run
from evalcore.models import EvalSetVersion, Job
from evalcore.services import uploads
from tests.factories import QUESTIONS
from tests.files import write_jsonl
from tests.s3server import bucket_keys, s3_server, s3_storages

pytestmark = pytest.mark.django_db


def questions_bytes() -> bytes:
    return "".join(json.dumps(q) + "\n" for q in QUESTIONS).encode()


@pytest.fixture(scope="module")
def s3_endpoint():
    with s3_server() as endpoint:
        yield endpoint


@pytest.fixture
def on_s3(settings, s3_endpoint):
    settings.STORAGES = s3_storages(s3_endpoint)
    yield s3_endpoint
    for key in bucket_keys(s3_endpoint):
        default_storage.delete(key)


def temp_leftovers(settings) -> list[Path]:
    return list(Path(settings.FILE_UPLOAD_TEMP_DIR).iterdir())


@pytest.fixture(autouse=True)
def own_temp_dir(settings, tmp_path):
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "upload-tmp")
    Path(settings.FILE_UPLOAD_TEMP_DIR).mkdir()


def test_an_api_upload_goes_to_the_object_storage_and_is_gone_once_imported(on_s3, owner_client, settings, monkeypatch):
    seen: list[str] = []
    original = uploads.local_file.__wrapped__

    def spy(value):
        seen.append(value)
        return original(value)

    monkeypatch.setattr(uploads, "local_file", uploads.contextlib.contextmanager(spy))
    upload = SimpleUploadedFile("questions.jsonl", questions_bytes())
    response = owner_client.post("/api/evalsets/import/", {"file": upload, "name": "support"})
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.params["path"].startswith("stored:uploads/") and job.params["path"].endswith("/questions.jsonl")
    assert seen == [job.params["path"]]  # the job read it back from the storage
    assert EvalSetVersion.objects.get(eval_set__name="support").question_count == len(QUESTIONS)
    assert bucket_keys(on_s3) == []  # deleted once the job ended
    assert temp_leftovers(settings) == []  # the job's temporary copy too


def test_a_failed_import_deletes_its_object_and_its_temporary_copy(on_s3, owner_client, settings):
    bad = SimpleUploadedFile("broken.jsonl", b'{"id": "q1", "question": "Why?"}\n{oops\n')
    response = owner_client.post("/api/evalsets/import/", {"file": bad, "name": "broken"})
    job = Job.objects.get(pk=response.json()["id"])
    assert job.status == Job.Status.FAILED and "broken.jsonl, line 2" in job.error
    assert bucket_keys(on_s3) == [] and temp_leftovers(settings) == []


def test_a_large_upload_is_streamed_to_the_storage_in_parts(on_s3, settings):
    """Over 2 MiB an upload is a temporary file on disk (never whole in memory); S3 gets it in a multipart upload."""
    from django.core.files.uploadedfile import TemporaryUploadedFile

    big = TemporaryUploadedFile("big.jsonl", "application/jsonl", 0, None)
    line = b'{"id": "x", "question": "' + b"y" * 1000 + b'"}\n'
    for _ in range(12_000):  # about 12 MB
        big.write(line)
    big.size = big.tell()
    big.seek(0)
    reference = uploads.save_upload(big)
    big.close()
    name = reference.removeprefix("stored:")
    assert default_storage.size(name) == 12_000 * len(line)
    with uploads.local_file(reference) as copy:
        assert copy.stat().st_size == 12_000 * len(line)
    assert not copy.exists()
    uploads.discard_upload(reference)
    assert bucket_keys(on_s3) == []


def test_a_command_on_a_broker_sends_the_file_itself_not_its_path(on_s3, settings, tmp_path, monkeypatch):
    """The worker may be on another host: the command stores the file and the job names the stored copy."""
    from evalcore.management import cli

    settings.CELERY_TASK_ALWAYS_EAGER = False
    sent: list[dict] = []

    def worker_elsewhere(job, on_progress):
        sent.append(dict(job.params))
        return job_run(job.pk)  # what the worker does with the task

    monkeypatch.setattr(cli, "job_follow", worker_elsewhere)
    path = write_jsonl(tmp_path / "questions.jsonl", QUESTIONS)
    call_command("import_evalset", str(path), "--name", "from-cli", "--quiet", stdout=io.StringIO())
    assert sent[0]["path"].startswith("stored:uploads/") and str(tmp_path) not in json.dumps(sent)
    assert EvalSetVersion.objects.filter(eval_set__name="from-cli").exists()
    assert bucket_keys(on_s3) == [] and path.exists()  # the stored copy is gone, the user's own file kept


def test_cleanup_deletes_old_uploads_no_job_reads_and_keeps_the_rest(settings, tmp_path):
    old = uploads.save_upload(SimpleUploadedFile("old.jsonl", b"{}\n"))
    in_use = uploads.save_upload(SimpleUploadedFile("queued.jsonl", b"{}\n"))
    fresh = uploads.save_upload(SimpleUploadedFile("fresh.jsonl", b"{}\n"))
    Job.objects.create(kind="import_evalset", params=EvalSetImportParams(path=in_use, name="q").__dict__)
    two_days_ago = time.time() - 48 * 3600
    for reference in (old, in_use):
        os.utime(default_storage.path(reference.removeprefix("stored:")), (two_days_ago, two_days_ago))
    stale_temp = Path(settings.FILE_UPLOAD_TEMP_DIR) / "tmpabc.upload.jsonl"
    stale_temp.write_bytes(b"half an upload")
    os.utime(stale_temp, (two_days_ago, two_days_ago))

    out = io.StringIO()
    call_command("cleanup_uploads", "--older-than", "24", stdout=out)
    left = {reference for reference, _ in uploads.stored_uploads()}
    assert left == {in_use, fresh}
    assert not stale_temp.exists()
    assert "2 upload(s) deleted." in out.getvalue()


def test_an_upload_cut_off_by_its_client_leaves_no_temporary_file(settings, owner):
    """gunicorn raises when the client goes away mid-body; Django's upload handler deletes its temporary file."""
    from django.test.client import ClientHandler

    from labelstudio_lite.accounts.tokens import token_create

    token = token_create(user=owner, name="tests")
    boundary = "xyzBOUNDARY"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nsupport\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="q.jsonl"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    sent = head + questions_bytes() * 2000  # about 5 MB sent of a promised 50 MB

    class Disconnecting(io.BytesIO):
        def read(self, size=-1):
            chunk = super().read(size)
            if not chunk:
                raise OSError("client disconnected")
            return chunk

    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/api/evalsets/import/",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "wsgi.url_scheme": "http",
        "wsgi.input": Disconnecting(sent),
        "wsgi.errors": io.StringIO(),
        "CONTENT_TYPE": f"multipart/form-data; boundary={boundary}",
        "CONTENT_LENGTH": str(50 * 1024 * 1024),
        "HTTP_AUTHORIZATION": f"Token {token.key}",
    }
    response = ClientHandler()(environ)  # Django's own request handling, as under gunicorn
    assert response.status_code >= 400, response.content
    assert temp_leftovers(settings) == []
    assert not Job.objects.exists() and list(uploads.stored_uploads()) == []


def test_a_job_whose_storage_went_away_fails_saying_so_and_one_whose_upload_is_gone_says_that(on_s3, settings):
    from evalcore.jobs.kinds import request_evalset_import

    def queued_import(name: str) -> Job:
        path = uploads.save_upload(SimpleUploadedFile("questions.jsonl", questions_bytes()))
        return request_evalset_import(params=EvalSetImportParams(path=path, name=name), start=False)

    gone = queued_import("gone")
    default_storage.delete(gone.params["path"].removeprefix(uploads.STORED))
    job_run(gone.pk)
    gone.refresh_from_db()
    assert gone.status == Job.Status.FAILED and "no longer in the storage; upload it again" in gone.error

    away = queued_import("away")
    with socket.socket() as closed:  # a port nothing listens on: the object store is down
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}"
    settings.STORAGES = s3_storages(dead)
    job_run(away.pk)
    away.refresh_from_db()
    assert away.status == Job.Status.FAILED and away.error.startswith("The file storage could not be read")
    assert "Internal error" not in away.error and "/readyz" in away.error
    assert not EvalSetVersion.objects.filter(eval_set__name="away").exists() and temp_leftovers(settings) == []
    settings.STORAGES = s3_storages(on_s3)  # back: its upload could not be deleted then, cleanup_uploads will


def test_format_detection_reads_the_start_of_an_upload_on_object_storage_not_all_of_it(
    on_s3, owner_client, settings, monkeypatch
):
    settings.IMPORT_MAX_LINE_BYTES = 1024  # detection reads 1 KiB + 64 KiB of the upload
    questions = [
        {"id": f"q{i:05d}", "question": f"Why is {i} so? " + "x" * 200, "type": "t", "gold": [{"doc": "d1"}]}
        for i in range(2000)
    ]
    body = "".join(json.dumps(q) + "\n" for q in questions).encode()
    whole_reads: list[str] = []
    default_storage.listdir("")  # set up the lazy storage, so that its class is the S3 one
    storage_class = type(default_storage._wrapped)
    opened = storage_class._open

    def spy(self, name, mode="rb"):
        whole_reads.append(name)
        return opened(self, name, mode)

    monkeypatch.setattr(storage_class, "_open", spy)
    response = owner_client.post(
        "/api/evalsets/import/", {"file": SimpleUploadedFile("big.jsonl", body), "name": "big"}
    )
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert len(body) > 400_000 and len(whole_reads) == 1  # the job's own copy; detection took one ranged read

    empty = owner_client.post("/api/evalsets/import/", {"file": SimpleUploadedFile("empty.jsonl", b""), "name": "e"})
    assert empty.status_code == 400 and "storage" not in empty.content.decode().lower(), empty.content
