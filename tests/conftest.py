"""Shared fixtures: test settings, test personas, and the rules for tests that need real services.

The data the tests work on is built by ``tests/factories.py``.

Tests that need PostgreSQL, Redis or Chromium skip with a clear reason on a bare machine. CI
sets ``LSL_FORBID_SKIPS=1``, which turns any skip into a failure, so nothing is silently left out
where every service is provided.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

FORBID_SKIPS = os.environ.get("LSL_FORBID_SKIPS", "") in ("1", "true", "yes")
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: Screenshots of browser tests (gitignored).
ARTIFACTS = Path(__file__).resolve().parent / "browser" / "artifacts"


def _broker_url() -> str:
    return os.environ.get("CELERY_BROKER_URL", "")


def _redis_database_of_this_process() -> None:
    """Under pytest-xdist each test process takes Redis databases of its own (the configured one + 1 + its
    number): a test's ``cache.clear()`` empties its whole database, which would take the queued tasks and the
    cache of a test running beside it in another process.

    Django's settings are read before this file (pytest-django loads them first), so the cache's location is
    set here before anything opens it; Celery and the workers a test starts read ``CELERY_BROKER_URL`` from
    the environment, which takes precedence over Celery's own setting.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return
    from urllib.parse import urlsplit, urlunsplit

    from django.conf import settings

    offset = 1 + int(worker[2:])
    for variable in ("CELERY_BROKER_URL", "CACHE_URL"):
        url = os.environ.get(variable, "")
        if not url.startswith(("redis://", "rediss://")):
            continue
        parts = urlsplit(url)
        database = int(parts.path.strip("/") or 0) + offset
        if database > 15:
            raise pytest.UsageError(f"{variable}={url}: process {worker} would need Redis database {database} (> 15)")
        os.environ[variable] = urlunsplit(parts._replace(path=f"/{database}"))
    broker = os.environ.get("CELERY_BROKER_URL", "")
    if broker.startswith("redis"):
        settings.CELERY_BROKER_URL = broker
    cache = settings.CACHES["default"]
    if "redis" in cache["BACKEND"].lower():
        cache["LOCATION"] = os.environ.get("CACHE_URL") or broker


_redis_database_of_this_process()


def pytest_collection_modifyitems(config, items):
    _deselect_benchmarks(config, items)
    from django.conf import settings

    vendor = settings.DATABASES["default"]["ENGINE"]
    on_postgres = "postgresql" in vendor
    has_redis = _broker_url().startswith("redis")
    has_chromium = os.path.exists(CHROMIUM) or shutil.which("chromium") is not None
    if "sqlite" not in vendor:
        # about SQLite's single writer lock (the embedded mode): there is nothing to meet on another
        # database, so they are deselected there, not skipped (CI forbids skips on PostgreSQL)
        sqlite_only = [item for item in items if "sqlite" in item.keywords]
        if sqlite_only:
            config.hook.pytest_deselected(items=sqlite_only)
            items[:] = [item for item in items if "sqlite" not in item.keywords]
    for item in items:
        if "postgres" in item.keywords and not on_postgres:
            item.add_marker(
                pytest.mark.skip(reason="needs PostgreSQL: set DATABASE_URL=postgres://postgres@127.0.0.1:5432/test")
            )
        if "redis" in item.keywords and not has_redis:
            item.add_marker(
                pytest.mark.skip(
                    reason="needs Redis for a real Celery worker: set CELERY_BROKER_URL=redis://127.0.0.1:6379/0"
                )
            )
        if "browser" in item.keywords and not has_chromium:
            item.add_marker(pytest.mark.skip(reason="needs Chromium: apt-get install -y chromium"))


def _deselect_benchmarks(config, items):
    """Tests marked ``benchmark`` (bigger versions of fast tests, performance checks) run only with LSL_BENCHMARK=1.

    They are deselected, not skipped, so CI's LSL_FORBID_SKIPS stays meaningful.
    """
    if os.environ.get("LSL_BENCHMARK", "") in ("1", "true", "yes"):
        return
    chosen = [item for item in items if "benchmark" not in item.keywords]
    if len(chosen) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if "benchmark" in item.keywords])
        items[:] = chosen


def pytest_sessionfinish(session, exitstatus):
    if not FORBID_SKIPS:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped:
        reporter.write_line(
            f"LSL_FORBID_SKIPS: {len(skipped)} test(s) were skipped; every service is provided here, so that is a failure",
            red=True,
        )
        session.exitstatus = 1


@pytest.fixture(autouse=True)
def _test_settings(settings, tmp_path):
    """Every test: Celery tasks run inline (eager), even where a broker is configured; uploads land
    in the test's own folder; passwords hash fast, so the personas log in fast; the cache starts
    empty (API throttles count requests there, per user id, and ids repeat between tests).

    Tests of a real worker turn eager tasks off themselves (``app.conf.task_always_eager = False``).
    """
    from django.core.cache import cache

    from labelstudio_lite.celery import app

    cache.clear()
    settings.EMBEDDED_TASKS_IN_THREAD = False
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("olivia", password="owner-pass-123", role="eval_owner")


@pytest.fixture
def annotator(django_user_model):
    return django_user_model.objects.create_user("adam", password="annot-pass-123", role="annotator")


@pytest.fixture
def other_annotator(django_user_model):
    return django_user_model.objects.create_user("bea", password="annot-pass-456", role="annotator")


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def annotator_client(client, annotator):
    client.force_login(annotator)
    return client


@pytest.fixture
def fake_judge():
    """The deterministic OpenAI-compatible fake judge on loopback, started for the test and stopped after it
    (``.base_url`` to point a config at; ``.fake`` holds its counters and takes faults)."""
    from evalcore.judging.fakeserver import FakeJudge, FakeJudgeServer

    with FakeJudgeServer(FakeJudge()) as server:
        yield server


# ----------------------------------------------------------------------------------------------
# Browser tests: headless Chromium driving the live server (mark them ``browser``)
# ----------------------------------------------------------------------------------------------


@pytest.fixture
def chromium(live_server, monkeypatch):
    """A headless Chromium (the machine's, never a downloaded one) next to the live server."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's loop runs on this thread
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
            # While Playwright's loop runs, the test's queries use a connection of their own
            # (Django keys connections by context): close it, or PostgreSQL cannot drop the test
            # database at the end ("being accessed by other users").
            from django.db import connections

            connections.close_all()


@pytest.fixture
def new_page(chromium):
    """Open a page in a fresh browser context (its own cookies): ``new_page(width=1280, height=800)``."""
    contexts = []

    def open_page(width: int = 1280, height: int = 800):
        context = chromium.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)
        return page

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def page(new_page):
    """One page at 1280x800."""
    return new_page()


def log_in(page, base_url: str, username: str, password: str, next_path: str = "/") -> None:
    """Log in with the keyboard only, landing on ``next_path``."""
    page.goto(f"{base_url}/accounts/login/?next={next_path}")
    # Autofocus can land after "load" on a busy machine: keys typed before it go nowhere and
    # the form posts half a username (a lockout-counted failure), so wait for the focus first.
    page.wait_for_function("document.activeElement && document.activeElement.id === 'id_username'")
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(password)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base_url}{next_path}")
