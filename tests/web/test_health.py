"""Health for operators: /healthz and /readyz answer without a login and name each failed check; outages are
503s in each door's own terms (JSON for the API, the 503 page, one line from a command); /metrics is for staff or
the token's bearer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import OperationalError
from django.test import Client

from evalcore.models import Job
from labelstudio_lite import health

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db


def test_healthz_answers_without_a_login():
    response = Client().get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_answers_without_a_login_with_each_check():
    response = Client().get("/readyz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ok"
    assert set(body["checks"]) == {"database", "migrations", "broker", "storage", "cache"}
    assert all(check["ok"] for check in body["checks"].values())


def test_readyz_names_a_broker_that_does_not_answer(settings, monkeypatch):
    from labelstudio_lite.celery import app

    settings.CELERY_TASK_ALWAYS_EAGER = False
    monkeypatch.setattr(app.conf, "broker_url", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:1/0")  # Celery reads it before its own setting
    response = Client().get("/readyz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["broker"]["ok"] is False and "Connection" in checks["broker"]["detail"]
    assert checks["database"]["ok"] and checks["storage"]["ok"]
    workers = response.json()["workers"]  # not asked again through a broker that is away: said at once
    assert workers["consuming"] is False and "broker does not answer" in workers["detail"] and workers["ms"] < 100


def test_readyz_names_unapplied_migrations_and_an_unreachable_storage(monkeypatch):
    from django.core.files.storage import default_storage
    from django.db.migrations.executor import MigrationExecutor

    class Pending:
        app_label, name = "evalcore", "0099_future"

    monkeypatch.setattr(MigrationExecutor, "migration_plan", lambda self, targets: [(Pending, False)])
    monkeypatch.setattr(default_storage, "listdir", lambda name: (_ for _ in ()).throw(OSError("bucket unreachable")))
    checks = Client().get("/readyz").json()["checks"]
    assert checks["migrations"] == {**checks["migrations"], "ok": False}
    assert "evalcore.0099_future" in checks["migrations"]["detail"] and "migrate" in checks["migrations"]["detail"]
    assert checks["storage"]["ok"] is False and "bucket unreachable" in checks["storage"]["detail"]


def test_the_api_answers_a_database_outage_with_a_json_503(owner, monkeypatch):
    from labelstudio_lite.accounts.tokens import token_create

    token = token_create(user=owner, name="tests")

    def down(*args, **kwargs):
        raise OperationalError('connection to server at "db", port 5432 failed: Connection refused')

    monkeypatch.setattr("labelstudio_lite.accounts.tokens.TokenAuthentication.authenticate_credentials", down)
    response = Client(raise_request_exception=False).get("/api/evalsets/", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 503 and response["Content-Type"] == "application/json"
    assert response["Retry-After"] and "The database is unavailable" in response.json()["detail"]


def test_a_page_answers_a_database_outage_with_the_503_page(owner_client, monkeypatch):
    def down(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr("labelstudio_lite.views.owner_home", down)
    owner_client.raise_request_exception = False
    response = owner_client.get("/")
    assert response.status_code == 503 and "The database is unavailable" in response.content.decode()


def test_a_command_says_the_database_is_down_in_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_", "PYTEST"))}
    env.update(VAR_DIR=str(tmp_path), DATABASE_URL="postgres://postgres@127.0.0.1:1/nowhere")
    result = subprocess.run(
        [sys.executable, "manage.py", "migrate"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert result.stderr.startswith("error: The database is unavailable") and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_metrics_are_refused_to_anyone_without_staff_or_the_token(client, owner_client):
    assert client.get("/metrics").status_code == 403
    assert owner_client.get("/metrics").status_code == 403


def test_metrics_give_request_latency_and_the_jobs_to_the_token_s_bearer(settings):
    settings.METRICS_TOKEN = "s3cret-metrics-token"
    Job.objects.create(kind="import_run", status=Job.Status.QUEUED)
    Client().get("/healthz")
    response = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-metrics-token")
    assert response.status_code == 200
    text = response.content.decode()
    assert "django_http_requests_latency_seconds_by_view_method_bucket" in text
    assert 'lsl_jobs{kind="import_run",status="queued"} 1.0' in text
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403


def test_metrics_give_how_long_finished_jobs_ran(settings):
    from datetime import timedelta

    from django.utils import timezone

    settings.METRICS_TOKEN = "s3cret-metrics-token"
    now = timezone.now()
    Job.objects.create(
        kind="gate", status=Job.Status.SUCCEEDED, started_at=now - timedelta(seconds=10), finished_at=now
    )
    text = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-metrics-token").content.decode()
    assert 'lsl_job_duration_seconds_bucket{kind="gate",le="5.0",status="succeeded"} 0.0' in text
    assert 'lsl_job_duration_seconds_bucket{kind="gate",le="15.0",status="succeeded"} 1.0' in text
    assert 'lsl_job_duration_seconds_sum{kind="gate",status="succeeded"} 10.0' in text


def test_metrics_are_open_to_staff(client, django_user_model):
    staff = django_user_model.objects.create_user("sam", password="staff-pass-123", is_staff=True)
    client.force_login(staff)
    assert client.get("/metrics").status_code == 200


def test_every_check_is_run(monkeypatch):
    monkeypatch.setitem(health.CHECKS, "database", lambda: (_ for _ in ()).throw(OperationalError("down")))
    ready, checks = health.readiness()
    assert not ready and checks["database"]["detail"] == "OperationalError: down" and checks["cache"]["ok"]


def test_metrics_serve_the_last_known_jobs_marked_stale_while_the_database_is_away(settings, monkeypatch):
    from labelstudio_lite import prometheus as metrics

    settings.METRICS_TOKEN = "s3cret-metrics-token"
    Job.objects.create(kind="import_run", status=Job.Status.QUEUED)

    def scrape() -> str:
        response = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-metrics-token")
        assert response.status_code == 200
        return response.content.decode()

    good = scrape()
    assert "lsl_database_up 1.0" in good and 'lsl_metric_stale{metric="lsl_jobs"} 0.0' in good

    def down():
        raise OperationalError('connection to server at "db", port 5432 failed: Connection refused')
        yield  # a generator, as the real one

    monkeypatch.setattr(metrics, "_database_metrics", down)
    away = scrape()
    assert "lsl_database_up 0.0" in away
    assert 'lsl_metric_stale{metric="lsl_jobs"} 1.0' in away
    assert 'lsl_metric_stale{metric="lsl_job_duration_seconds"} 1.0' in away
    assert 'lsl_jobs{kind="import_run",status="queued"} 1.0' in away  # the last known value, still served
    assert 'lsl_metric_refreshed_timestamp_seconds{metric="lsl_jobs"}' in away
    assert "django_http_requests_latency_seconds_by_view_method_bucket" in away  # what needs no database


def test_metrics_answer_200_from_a_process_whose_database_never_answered(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_", "PYTEST"))}
    env.update(
        VAR_DIR=str(tmp_path),
        DATABASE_URL="postgres://postgres@127.0.0.1:1/nowhere",
        METRICS_TOKEN="s3cret-metrics-token",
        DJANGO_SETTINGS_MODULE="labelstudio_lite.settings",
    )
    script = (
        "import django; django.setup()\n"
        "from django.test import Client\n"
        "r = Client().get('/metrics', HTTP_AUTHORIZATION='Bearer s3cret-metrics-token', HTTP_HOST='localhost')\n"
        "print(r.status_code); print(r.content.decode())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    status, _, text = result.stdout.partition("\n")
    assert status == "200", result.stdout + result.stderr
    assert "lsl_database_up 0.0" in text and 'lsl_metric_stale{metric="lsl_jobs"} 1.0' in text
    assert "lsl_jobs{" not in text  # never read: nothing to serve, and said so
