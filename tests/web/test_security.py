"""Logins and the API are throttled (and the refusals logged); pages carry the security headers;
production settings come from the environment and pass ``check --deploy``; CSV exports are safe to
open in a spreadsheet; Server-Timing goes to staff only."""

from __future__ import annotations

import csv
import io
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse

from evalcore.services.spreadsheets import spreadsheet_cell
from labelstudio_lite.accounts.tokens import token_create
from labelstudio_lite.labelling.services.exports import labels_export
from tests.factories import make_marked_run

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def log_in(client, username: str, password: str):
    return client.post(reverse("login"), {"username": username, "password": password})


def test_too_many_wrong_passwords_lock_the_login_and_say_when_to_retry(client, owner, settings, caplog):
    settings.AXES_FAILURE_LIMIT = 3
    caplog.set_level(logging.WARNING)
    for _ in range(2):
        response = log_in(client, "olivia", "wrong-password")
        assert response.status_code == 200 and "_auth_user_id" not in client.session

    locked = log_in(client, "olivia", "wrong-password")
    assert locked.status_code == 429
    page = locked.content.decode()
    assert "Too many failed logins" in page and "try again after" in page
    assert int(locked["Retry-After"]) == 15 * 60

    right = log_in(client, "olivia", "owner-pass-123")
    assert right.status_code == 429 and "_auth_user_id" not in client.session, "the right password is refused too"
    assert any("axes" in record.name for record in caplog.records), "failed logins and the lockout are logged"


def test_another_account_or_the_right_password_before_the_limit_still_logs_in(client, owner, annotator, settings):
    settings.AXES_FAILURE_LIMIT = 3
    log_in(client, "olivia", "wrong-password")
    log_in(client, "olivia", "wrong-password")
    assert log_in(client, "adam", "annot-pass-123").status_code == 302
    client.logout()
    assert log_in(client, "olivia", "owner-pass-123").status_code == 302


def test_an_api_client_over_its_rate_gets_429_with_retry_after_and_is_logged(owner, settings, client, caplog):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "3/minute"},
    }
    caplog.set_level(logging.WARNING, logger="labelstudio_lite.throttles")
    token = token_create(user=owner, name="tests").key
    answers = [client.get("/api/runs/", HTTP_AUTHORIZATION=f"Token {token}").status_code for _ in range(4)]
    assert answers == [200, 200, 200, 429]
    throttled = client.get("/api/runs/", HTTP_AUTHORIZATION=f"Token {token}")
    assert int(throttled["Retry-After"]) > 0 and "throttled" in throttled.json()["detail"]
    assert "API throttled (user" in caplog.text


def test_pages_carry_the_security_headers(owner_client, db):
    response = owner_client.get("/")
    csp = response["Content-Security-Policy"]
    for directive in ("default-src 'self'", "script-src 'self'", "style-src 'self'", "object-src 'none'"):
        assert directive in csp
    assert "unsafe-eval" not in csp and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    assert "camera=()" in response["Permissions-Policy"] and "geolocation=()" in response["Permissions-Policy"]
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"


def test_server_timing_goes_to_staff_and_with_debug_only(client, owner, settings, django_user_model):
    assert "Server-Timing" not in client.get(reverse("login"))
    client.force_login(owner)
    assert "Server-Timing" not in client.get("/")
    settings.DEBUG = True
    assert "app;dur=" in client.get("/")["Server-Timing"]
    settings.DEBUG = False
    staff = django_user_model.objects.create_user("sam", password="staff-pass-123", role="eval_owner", is_staff=True)
    client.force_login(staff)
    assert 'desc="' in client.get("/")["Server-Timing"]


PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "p" * 20 + "-production-secret-key-of-fifty-and-more-characters",
    "ALLOWED_HOSTS": "lsl.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://lsl.example.com",
    "SECURE_COOKIES": "1",
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "SECURE_HSTS_PRELOAD": "1",
    "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
}


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_", "DJANGO_"))}
    clean.update({"DJANGO_SETTINGS_MODULE": "labelstudio_lite.settings", "PYTHONPATH": str(ROOT), **env})
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow  # seconds of subprocesses or simulation: CI runs it (./dev test -m "")
def test_check_deploy_is_clean_with_the_production_variables_of_the_readme(tmp_path):
    result = manage({**PRODUCTION, "VAR_DIR": str(tmp_path)}, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
    guide = (ROOT / "docs" / "deploy.md").read_text()  # the configuration table moved there from the README
    for variable in PRODUCTION:
        assert f"`{variable}`" in guide, f"{variable} is not in the configuration table of docs/deploy.md"


@pytest.mark.slow  # seconds of subprocesses or simulation: CI runs it (./dev test -m "")
def test_check_deploy_warns_without_them(tmp_path):
    result = manage({"VAR_DIR": str(tmp_path), "DEBUG": "0"}, "check", "--deploy")
    assert "security.W004" in result.stderr + result.stdout and "security.W008" in result.stderr + result.stdout


def test_the_production_variables_become_the_settings(tmp_path):
    code = (
        "import django; from django.conf import settings; django.setup(); "
        "print(settings.SECURE_HSTS_SECONDS, settings.SECURE_SSL_REDIRECT, settings.SECURE_PROXY_SSL_HEADER, "
        "settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE, settings.SESSION_COOKIE_AGE)"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_", "DJANGO_"))}
    clean.update({"DJANGO_SETTINGS_MODULE": "labelstudio_lite.settings", "VAR_DIR": str(tmp_path), **PRODUCTION})
    clean["SESSION_COOKIE_AGE"] = "3600"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True)
    assert result.stdout.split() == [
        "31536000",
        "True",
        "('HTTP_X_FORWARDED_PROTO',",
        "'https')",
        "True",
        "True",
        "3600",
    ]


def test_a_malformed_proxy_header_stops_start_up(tmp_path):
    result = manage({"VAR_DIR": str(tmp_path), "SECURE_PROXY_SSL_HEADER": "X Forwarded"}, "check")
    assert result.returncode != 0 and "SECURE_PROXY_SSL_HEADER" in result.stderr


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'),
        ("+1", "'+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("fine", "fine"),
        (-0.5, -0.5),
        ("", ""),
    ],
)
def test_a_cell_a_spreadsheet_would_run_is_escaped(value, cell):
    assert spreadsheet_cell(value) == cell


def test_a_label_export_is_safe_in_a_spreadsheet_and_served_as_utf8(owner, annotator, owner_client, tmp_path):
    from labelstudio_lite.labelling.services.assignment import next_item, submit_label
    from labelstudio_lite.labelling.services.campaigns import campaign_create

    run = make_marked_run(folder=tmp_path / "run", n=3, evalset="csv")
    campaign = campaign_create(run=run, name="csv", unit="answer", size=3, overlap=1, annotators=[annotator])
    served = next_item(campaign=campaign, user=annotator)
    submit_label(
        campaign=campaign, user=annotator, item_id=served.item.pk, value="supported", rationale='=HYPERLINK("x") · ok'
    )
    record = labels_export(campaign=campaign, fmt="csv", user=owner)
    row = next(csv.DictReader(io.StringIO(record.content)))
    assert row["rationale"] == '\'=HYPERLINK("x") · ok'

    response = owner_client.get(reverse("labelling:export-download", args=["csv", record.version]))
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert "· ok".encode() in response.content
