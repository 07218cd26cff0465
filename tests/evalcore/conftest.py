"""Fixtures for the eval sets, runs and gate tests: the support set as files and imported, row counts, the gate command.

The data comes from ``tests/factories.py``; settings for every test from ``tests/conftest.py``.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evalcore.models import (
    Comparison,
    EvalSet,
    EvalSetVersion,
    GateDecisionRecord,
    Job,
    JudgeConfig,
    Question,
    Row,
    Run,
    RunChunk,
)
from evalcore.services.evalsets import evalset_import
from evalcore.services.problems import ImportFailed
from evalcore.services.runs import run_import
from tests.factories import JUDGE, OTHER_JUDGE, QUESTIONS, claims, make_eval_set, make_run, ok_rows
from tests.files import write_csv as write_csv_file
from tests.files import write_jsonl

COUNTED = (EvalSet, EvalSetVersion, Question, Run, Row, RunChunk, JudgeConfig, Comparison, GateDecisionRecord)


def url_of_the_test_database() -> str:
    """A DATABASE_URL that points a separate process (a worker, manage.py) at pytest's test database."""
    from django.db import connection

    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    auth = settings["USER"] + (f":{settings['PASSWORD']}" if settings.get("PASSWORD") else "")
    return f"postgres://{auth}@{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}/{settings['NAME']}"


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a separate process of this project, on the test database."""
    import os

    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DATABASE_URL", "CELERY_", "PYTEST", "DJANGO_SETTINGS"))
    }
    env.update({"DATABASE_URL": url_of_the_test_database(), "DJANGO_SETTINGS_MODULE": "labelstudio_lite.settings"})
    env.update(extra)
    return env


def start_celery_worker(queue: str, log_path: Path, **env: str):  # type: ignore[no-untyped-def]
    """A separate Celery worker process (solo pool) on the test database, reading only ``queue``; its output is
    appended to ``log_path``. Stop it with :func:`stop_celery_worker`."""
    import os
    import subprocess
    import sys

    log = open(log_path, "a")  # noqa: SIM115  (closed by stop_celery_worker)
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "labelstudio_lite", "worker", "--pool", "solo", "--concurrency", "1"]
        + ["-Q", queue, "--loglevel", "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=Path(__file__).resolve().parents[2],
        env=subprocess_env(CELERY_BROKER_URL=os.environ["CELERY_BROKER_URL"], CELERY_TASK_ALWAYS_EAGER="0", **env),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    worker.log = log  # type: ignore[attr-defined]
    return worker


def stop_celery_worker(worker) -> None:  # type: ignore[no-untyped-def]
    """Stop a worker from :func:`start_celery_worker` (gently, then not) and close its log."""
    import subprocess

    if worker.poll() is None:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=10)
    worker.log.close()


def db_counts() -> dict[str, int]:
    """Rows per evalcore table, to prove a refused import changed nothing."""
    return {model.__name__: model.objects.count() for model in COUNTED}


def refused(call, *, file: str, line: int | None = None, field: str | None = None, says: str = "") -> str:
    """Run ``call``, expect ImportFailed, check the database did not change; return the message."""
    before = db_counts()
    with pytest.raises(ImportFailed) as excinfo:
        call()
    assert db_counts() == before, "a refused import must write nothing"
    where = file
    if line is not None:
        where += f", line {line}"
    if field is not None:
        where += f", field '{field}'"
    message = str(excinfo.value)
    assert message.startswith("Nothing was imported")
    matching = [p for p in excinfo.value.problems if str(p).startswith(where + ": ")]
    assert matching, f"no problem at {where!r} in:\n{message}"
    assert says in str(matching[0]), f"{says!r} not in {matching[0]}"
    assert str(matching[0]) in message
    return message


@pytest.fixture
def questions_file(tmp_path) -> Path:
    return write_jsonl(tmp_path / "questions.jsonl", QUESTIONS)


@pytest.fixture
def version(db, questions_file) -> EvalSetVersion:
    """Eval set 'support' v1, imported through the service (sealed)."""
    return evalset_import(path=questions_file, name="support").version


@pytest.fixture
def rows_file(tmp_path) -> Path:
    return write_jsonl(tmp_path / "rows.jsonl", ok_rows())


@pytest.fixture
def run(version, rows_file) -> Run:
    """Run 'base' on support v1: a valid row for every question, k 3, judged by JUDGE."""
    return run_import(path=rows_file, evalset="support", name="base", k=3, judge_config=JUDGE).run


@pytest.fixture
def job_count():
    return lambda: Job.objects.count()


def write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> Path:
    return write_csv_file(path, header, rows, json_cells=True)


@pytest.fixture
def synthetic(db, tmp_path):
    """40 questions; baseline faithfulness 0.5 everywhere. Candidates: same (pass), worse (block), mixed (review)."""
    n = 40
    questions = [
        {"id": f"s{i:02d}", "question": f"Question {i}?", "type": "a" if i % 2 else "b", "gold": [{"doc": f"d{i}"}]}
        for i in range(n)
    ]
    make_eval_set(folder=tmp_path, questions=questions, name="syn")

    def make(name, supported_of, judge=JUDGE):
        rows = [
            {"id": f"s{i:02d}", "retrieved": [f"d{i}"], "context_ids": [f"d{i}"], "claims": claims(supported_of(i))}
            for i in range(n)
        ]
        return make_run(folder=tmp_path, rows=rows, evalset="syn", name=name, k=1, judge_config=judge)

    return {
        "base": make("base", lambda i: 1),
        "same": make("same", lambda i: 1),
        "worse": make("worse", lambda i: 0 if i < 20 else 1),
        "mixed": make("mixed", lambda i: 2 if i < 10 else (0 if i < 20 else 1)),
        "slightly-worse": make("slightly-worse", lambda i: 0 if i < 2 else 1),
        "other-judge": make("other-judge", lambda i: 1, judge=OTHER_JUDGE),
    }


def gate(*args: str) -> tuple[int, str, str]:
    """Run the gate command; return (exit code, stdout, stderr) as ``manage.py gate`` would give them.

    ``manage.py`` turns a CommandError into its ``returncode`` (1) on standard error; the command
    itself calls ``sys.exit`` with 3 or 4. (``run_from_argv`` would close the test's connection.)
    """
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("gate", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as stop:
        code = stop.code
    except CommandError as error:
        code = error.returncode
        err.write(f"CommandError: {error}\n")
    return code, out.getvalue(), err.getvalue()
