"""Fixtures for the eval sets, runs and gate tests: small files in every format, row counts, eager tasks."""

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
from tests.files import write_csv as write_csv_file
from tests.files import write_jsonl  # noqa: F401  (used by the tests)

COUNTED = (EvalSet, EvalSetVersion, Question, Run, Row, RunChunk, JudgeConfig, Comparison, GateDecisionRecord)

JUDGE = {
    "model": "gpt-x",
    "model_version": "2026-05",
    "prompt": "Is the claim supported by the context?\n{context}\n{claim}",
    "temperature": 0.0,
    "claim_splitting": "llm-atomic-claims-v2",
    "library_versions": {"ragas": "0.3.9"},
}
OTHER_JUDGE = {**JUDGE, "model_version": "2026-09"}

#: Five questions of two types: q4 is unanswerable, q5 has span gold.
QUESTIONS: list[dict[str, Any]] = [
    {"id": "q1", "question": "What is the refund window?", "type": "policy", "answerable": True,
     "reference_answer": "30 days.", "gold": [{"doc": "d1", "grade": 3}, {"doc": "d2", "grade": 1}]},
    {"id": "q2", "question": "What is the late fee?", "type": "billing", "answerable": True,
     "reference_answer": "5 %.", "gold": [{"doc": "d3", "grade": 2}]},
    {"id": "q3", "question": "How long is the notice period?", "type": "policy", "answerable": True,
     "reference_answer": "14 days.", "gold": [{"doc": "d4", "grade": 1}]},
    {"id": "q4", "question": "Who is the CEO's dentist?", "type": "billing", "answerable": False,
     "reference_answer": "", "gold": []},
    {"id": "q5", "question": "What is the invoice date?", "type": "billing", "answerable": True,
     "reference_answer": "The 1st.", "gold": [{"doc": "d5", "grade": 2, "start": 100, "end": 180}]},
]


def ok_row(qid: str, **overrides: Any) -> dict[str, Any]:
    """A valid run row for question ``qid`` (two claims, one supported)."""
    row = {
        "id": qid,
        "retrieved": ["d1", "d9", "d3", "d4", "d5", "d7"],
        "context_ids": ["d1", "d9", "d3"],
        "context": "text one\n\ntext two\n\ntext three",
        "answer": "An answer.",
        "declined": False,
        "claims": [{"text": "A.", "supported": True, "rationale": "stated"}, {"text": "B.", "supported": False}],
        "scores": {"answer_relevance": 4},
    }
    row.update(overrides)
    return row


def ok_rows() -> list[dict[str, Any]]:
    return [ok_row(q["id"]) for q in QUESTIONS]






def pytest_collection_modifyitems(config, items):
    """Benchmarks in this folder (marked ``benchmark``) run only with LSL_BENCHMARK=1.

    They are deselected, not skipped, so CI's LSL_FORBID_SKIPS stays meaningful.
    """
    import os

    if os.environ.get("LSL_BENCHMARK", "") in ("1", "true", "yes"):
        return
    here = str(Path(__file__).parent)
    chosen, dropped = [], []
    for item in items:
        (dropped if "benchmark" in item.keywords and str(item.fspath).startswith(here) else chosen).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = chosen


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

    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_", "PYTEST", "DJANGO_SETTINGS"))}
    env.update({"DATABASE_URL": url_of_the_test_database(), "DJANGO_SETTINGS_MODULE": "labelstudio_lite.settings"})
    env.update(extra)
    return env


def db_counts() -> dict[str, int]:
    """Rows per evalcore table, to prove a refused import changed nothing."""
    return {model.__name__: model.objects.count() for model in COUNTED}


@pytest.fixture(autouse=True)
def _eager_tasks_and_private_media(settings, tmp_path):
    """Tasks run inline (eager Celery, no thread); uploads land in the test's own folder."""
    from labelstudio_lite.celery import app

    settings.EMBEDDED_TASKS_IN_THREAD = False
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # personas log in fast
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


@pytest.fixture
def questions_file(tmp_path) -> Path:
    return write_jsonl(tmp_path / "questions.jsonl", QUESTIONS)


@pytest.fixture
def version(db, questions_file) -> EvalSetVersion:
    """Eval set 'support' v1, imported through the service (sealed)."""
    from evalcore.services.evalsets import evalset_import

    return evalset_import(path=questions_file, name="support").version


@pytest.fixture
def rows_file(tmp_path) -> Path:
    return write_jsonl(tmp_path / "rows.jsonl", ok_rows())


@pytest.fixture
def run(version, rows_file) -> Run:
    from evalcore.services.runs import run_import

    return run_import(path=rows_file, evalset="support", name="base", k=3, judge_config=JUDGE).run


@pytest.fixture
def job_count():
    return lambda: Job.objects.count()


def write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> Path:
    return write_csv_file(path, header, rows, json_cells=True)


def claims(supported: int, total: int = 2) -> list[dict]:
    return [{"text": f"C{i}.", "supported": i < supported} for i in range(total)]


@pytest.fixture
def synthetic(db, tmp_path):
    """40 questions; baseline faithfulness 0.5 everywhere. Candidates: same (pass), worse (block), mixed (review)."""
    from evalcore.services.evalsets import evalset_import
    from evalcore.services.runs import run_import

    n = 40
    questions = [{"id": f"s{i:02d}", "question": f"Question {i}?", "type": "a" if i % 2 else "b", "gold": [{"doc": f"d{i}"}]} for i in range(n)]
    evalset_import(path=write_jsonl(tmp_path / "qs.jsonl", questions), name="syn")

    def make(name, supported_of, judge=JUDGE):
        rows = [{"id": f"s{i:02d}", "retrieved": [f"d{i}"], "context_ids": [f"d{i}"], "claims": claims(supported_of(i))} for i in range(n)]
        return run_import(path=write_jsonl(tmp_path / f"{name}.jsonl", rows), evalset="syn", name=name, k=1, judge_config=judge).run

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
