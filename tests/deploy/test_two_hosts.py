"""A deployment as docs/deploy.md describes it, on one machine: two gunicorn hosts and two Celery workers
(prefork, each with its own VAR_DIR and MEDIA_ROOT), PostgreSQL, a throwaway Redis as the broker and another as
the cache, and uploads in S3-compatible object storage (moto's server). An import goes in through one host and
the labels through the other; a killed pool child and a killed worker leave failed jobs with the reason, never
"running" and never half an eval set; a broker stopped during an upload leaves no job and no upload; /readyz
names each fault (broker, storage, database)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from evalcore.models import EvalSetVersion, Job, Run
from labelstudio_lite.labelling.models import Label
from tests.evalcore.conftest import subprocess_env
from tests.factories import QUESTIONS, make_campaign, ok_rows
from tests.s3server import bucket_keys, s3_env, s3_server

from .hosts import ROOT, Deployment, parent_of, redis_server, request, upload

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BIG = 60_000  # questions in the import that gets killed: long enough to be caught running


def jsonl(records: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def big_questions() -> bytes:
    return jsonl([{"id": f"b{i:06d}", "question": f"Question {i}?", "gold": [{"doc": f"d{i}"}]} for i in range(BIG)])


def until(condition, timeout: float, what) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")
        time.sleep(0.1)


def finished_job(port: int, token: str, job_id: int, timeout: float, logs) -> dict:
    """Follow a job through a host's API (the reaper runs there too) until it ends."""
    state: dict = {}

    def done() -> bool:
        state.update(request(port, "GET", f"/api/jobs/{job_id}/", token=token)[1])
        return state.get("status") in ("succeeded", "failed", "cancelled")

    until(done, timeout, lambda: f"job {job_id} to end (it is {state})\n{logs()}")
    return state


def running_on(job_id: int, timeout: float, logs) -> int:
    """The pid of the pool child running the job, once it runs."""
    until(
        lambda: Job.objects.filter(pk=job_id, status="running").exclude(runner="").exists(),
        timeout,
        lambda: f"job {job_id} to start\n{logs()}",
    )
    return int(Job.objects.get(pk=job_id).runner.split(":")[1])


def test_two_hosts_and_two_workers_survive_killed_workers_a_stopped_broker_and_tell_each_fault(
    tmp_path, owner, annotator
):
    from labelstudio_lite.accounts.tokens import token_create

    owner_token = token_create(user=owner, name="tests").key
    annotator_token = token_create(user=annotator, name="tests").key
    broker = redis_server(tmp_path, "broker")
    cache = redis_server(tmp_path, "cache")
    with s3_server() as endpoint:
        env = subprocess_env(
            CELERY_BROKER_URL=f"redis://127.0.0.1:{broker.port}/0",
            CACHE_URL=f"redis://127.0.0.1:{cache.port}/0",
            CELERY_TASK_ALWAYS_EAGER="0",
            SECRET_KEY="one-secret-key-for-every-host-" + uuid.uuid4().hex,
            JOB_HEARTBEAT_SECONDS="1",
            METRICS_TOKEN="deploy-metrics-token",
            DEBUG="0",
            LOG_LEVEL="INFO",
            **s3_env(endpoint),
        )
        deployment = Deployment(tmp_path, env, [broker, cache])
        try:
            a, b = deployment.web("host-a"), deployment.web("host-b")
            w1, w2 = deployment.worker("worker-1"), deployment.worker("worker-2")
            logs = deployment.logs

            # health: both hosts up and ready, without a login
            for host in (a, b):
                assert request(host.port, "GET", "/healthz") == (200, {"status": "ok"})
                status, ready = request(host.port, "GET", "/readyz")
                assert status == 200, ready

            # import through host A (the upload lands in the object storage, a worker reads it from there)
            status, job = upload(
                a.port, "/api/evalsets/import/", owner_token, {"name": "support"}, "questions.jsonl", jsonl(QUESTIONS)
            )
            assert status == 202, job
            assert finished_job(b.port, owner_token, job["id"], 120, logs)["status"] == "succeeded"
            status, job = upload(
                a.port,
                "/api/runs/import/",
                owner_token,
                {"evalset": "support", "name": "base", "k": "3"},
                "rows.jsonl",
                jsonl(ok_rows()),
            )
            assert status == 202, job
            assert finished_job(b.port, owner_token, job["id"], 120, logs)["status"] == "succeeded"
            assert bucket_keys(endpoint) == []  # uploads deleted once their jobs ended

            # label through host B
            make_campaign(run=Run.objects.get(name="base"), name="deploy", annotators=[annotator])
            labelled = 0
            while True:
                status, item = request(b.port, "POST", "/api/label/deploy/next/", token=annotator_token)
                if status == 204:
                    break
                assert status == 200, item
                body = json.dumps({"item_id": item["item_id"], "value": "supported"}).encode()
                status, label = request(
                    b.port,
                    "POST",
                    "/api/label/deploy/labels/",
                    token=annotator_token,
                    body=body,
                    headers={"Content-Type": "application/json", "Idempotency-Key": uuid.uuid4().hex},
                )
                assert status == 201, label
                labelled += 1
            assert labelled == len(ok_rows()) == Label.objects.filter(item__campaign__name="deploy").count()

            # the command line on a third machine sends the file itself (the worker cannot read its path)
            elsewhere = tmp_path / "laptop"
            elsewhere.mkdir()
            (elsewhere / "questions.jsonl").write_bytes(jsonl(QUESTIONS))
            command = subprocess.run(
                [
                    sys.executable,
                    "manage.py",
                    "import_evalset",
                    str(elsewhere / "questions.jsonl"),
                    "--name",
                    "cli-set",
                ],
                cwd=ROOT,
                env=deployment.host_env("laptop"),
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert command.returncode == 0, command.stderr + logs()
            assert Job.objects.get(params__name="cli-set").params["path"].startswith("stored:uploads/")
            assert EvalSetVersion.objects.get(eval_set__name="cli-set").question_count == len(QUESTIONS)

            # a pool child killed mid-import (as the OOM killer does): failed with the reason, nothing kept
            status, job = upload(
                a.port, "/api/evalsets/import/", owner_token, {"name": "big"}, "big.jsonl", big_questions()
            )
            assert status == 202, job
            child = running_on(job["id"], 180, logs)
            assert parent_of(child) in (w1.process.pid, w2.process.pid)  # a pool child, not a worker
            os.kill(child, signal.SIGKILL)
            killed = finished_job(b.port, owner_token, job["id"], 60, logs)
            assert killed["status"] == "failed" and "killed or crashed" in killed["error"], killed
            assert not EvalSetVersion.objects.filter(eval_set__name="big").exists()

            # a whole worker killed mid-import (the host lost): failed with the reason, never run again
            status, job = upload(
                a.port, "/api/evalsets/import/", owner_token, {"name": "big"}, "big.jsonl", big_questions()
            )
            assert status == 202, job
            child = running_on(job["id"], 180, logs)
            victim = w1 if parent_of(child) == w1.process.pid else w2
            victim.kill_all()
            lost = finished_job(a.port, owner_token, job["id"], 60, logs)
            assert lost["status"] == "failed" and f"pid {child}" in lost["error"], lost
            deployment.procs.remove(victim)
            deployment.worker("worker-3")  # the replacement does not run the lost job again
            time.sleep(3)
            assert Job.objects.get(pk=job["id"]).status == "failed"
            assert not EvalSetVersion.objects.filter(eval_set__name="big").exists()

            # tried again, the import finishes with exactly the file's questions
            status, job = upload(
                a.port, "/api/evalsets/import/", owner_token, {"name": "big"}, "big.jsonl", big_questions()
            )
            assert finished_job(b.port, owner_token, job["id"], 300, logs)["status"] == "succeeded"
            assert EvalSetVersion.objects.get(eval_set__name="big").questions.count() == BIG

            # metrics for operators, from either host: requests, jobs, the broker's queue
            status, metrics = request(
                a.port, "GET", "/metrics", headers={"Authorization": "Bearer deploy-metrics-token"}
            )
            assert status == 200 and "django_http_requests_latency_seconds_by_view_method_bucket" in metrics
            assert 'lsl_jobs{kind="import_evalset",status="failed"} 2.0' in metrics
            assert "lsl_job_duration_seconds_bucket" in metrics and "lsl_broker_up 1.0" in metrics
            assert 'lsl_queue_depth{queue="celery"} 0.0' in metrics

            # the broker stops while an upload is on its way: a JSON 503, no job, no upload, /readyz says why
            jobs_before = Job.objects.count()
            body, content_type = _multipart_body({"name": "late"}, jsonl(QUESTIONS) * 200)
            connection = http.client.HTTPConnection("127.0.0.1", a.port, timeout=60)
            connection.putrequest("POST", "/api/evalsets/import/")
            for header, value in {
                "Authorization": f"Token {owner_token}",
                "Content-Type": content_type,
                "Content-Length": str(len(body)),
            }.items():
                connection.putheader(header, value)
            connection.endheaders()
            connection.send(body[: len(body) // 2])
            broker.stop()
            connection.send(body[len(body) // 2 :])
            response = connection.getresponse()
            answer = json.loads(response.read())
            connection.close()
            assert response.status == 503 and "broker" in answer["detail"], answer
            assert Job.objects.count() == jobs_before and bucket_keys(endpoint) == []
            assert list((tmp_path / "host-a" / "tmp").iterdir()) == []
            status, ready = request(a.port, "GET", "/readyz")
            assert status == 503 and not ready["checks"]["broker"]["ok"] and ready["checks"]["database"]["ok"]

            broker_again = redis_server(tmp_path, "broker-again", port=broker.port)
            deployment.procs.append(broker_again)
            until(lambda: request(a.port, "GET", "/readyz")[0] == 200, 30, "the broker to be ready again")

        finally:
            deployment.stop()
    _storage_and_database_faults(tmp_path, env)


def _multipart_body(fields: dict[str, str], content: bytes) -> tuple[bytes, str]:
    from .hosts import multipart

    return multipart(fields, "file", "questions.jsonl", content)


def _storage_and_database_faults(tmp_path, env) -> None:
    """A host whose object storage and database are away: /healthz answers, /readyz names both, the API a JSON 503."""
    broken = {
        **env,
        "STORAGE_S3_ENDPOINT_URL": "http://127.0.0.1:1",  # nothing listens there
        "DATABASE_URL": "postgres://postgres@127.0.0.1:1/nowhere",
        "CELERY_TASK_ALWAYS_EAGER": "1",
        "CELERY_BROKER_URL": "",
    }
    deployment = Deployment(tmp_path, broken)
    try:
        c = deployment.web("host-c")
        assert request(c.port, "GET", "/healthz") == (200, {"status": "ok"})
        status, ready = request(c.port, "GET", "/readyz")
        assert status == 503
        assert not ready["checks"]["database"]["ok"] and "OperationalError" in ready["checks"]["database"]["detail"]
        assert not ready["checks"]["storage"]["ok"]
        status, answer = request(c.port, "GET", "/api/evalsets/", token="x" * 40)
        assert status == 503 and "The database is unavailable" in answer["detail"], answer
    finally:
        deployment.stop()
