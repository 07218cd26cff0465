"""Settings are read from the environment and a bad value stops the app at start-up."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from labelstudio_lite.env import envbool, envint

ROOT = Path(__file__).resolve().parents[2]


def test_envbool_reads_the_usual_spellings(monkeypatch):
    monkeypatch.setenv("X_FLAG", "yes")
    assert envbool("X_FLAG", False) is True
    monkeypatch.setenv("X_FLAG", "0")
    assert envbool("X_FLAG", True) is False


def test_envbool_refuses_a_value_it_cannot_read(monkeypatch):
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="X_FLAG='maybe' is not a boolean"):
        envbool("X_FLAG", False)


def test_envint_refuses_a_number_below_its_minimum(monkeypatch):
    monkeypatch.setenv("X_INT", "3")
    with pytest.raises(ImproperlyConfigured, match="must be at least 10"):
        envint("X_INT", 600, minimum=10)


def _settings_in_fresh_interpreter(env_overrides, expr):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_"))}
    env.update(env_overrides)
    env["DJANGO_SETTINGS_MODULE"] = "labelstudio_lite.settings"
    code = f"import django; from django.conf import settings; django.setup(); print(repr(({expr})))"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)


def test_embedded_default_is_sqlite_with_tasks_in_process(tmp_path):
    result = _settings_in_fresh_interpreter(
        {"VAR_DIR": str(tmp_path)},
        "settings.DATABASES['default']['ENGINE'], settings.CELERY_TASK_ALWAYS_EAGER, settings.CELERY_BROKER_URL",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "('django.db.backends.sqlite3', True, 'memory://')"


def test_database_url_and_broker_come_from_the_environment(tmp_path):
    result = _settings_in_fresh_interpreter(
        {
            "VAR_DIR": str(tmp_path),
            "DATABASE_URL": "postgres://someone@db.example:5433/evals",
            "CELERY_BROKER_URL": "redis://cache.example:6379/1",
        },
        "settings.DATABASES['default']['ENGINE'], settings.DATABASES['default']['NAME'], "
        "settings.CELERY_TASK_ALWAYS_EAGER, settings.CACHES['default']['BACKEND']",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "('django.db.backends.postgresql', 'evals', False, 'django.core.cache.backends.redis.RedisCache')"
    )


def test_a_malformed_setting_stops_start_up(tmp_path):
    result = _settings_in_fresh_interpreter({"VAR_DIR": str(tmp_path), "DEBUG": "perhaps"}, "settings.DEBUG")
    assert result.returncode != 0
    assert "DEBUG='perhaps' is not a boolean" in result.stderr
