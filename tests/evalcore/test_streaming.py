"""Big run files stream: rows are read, scored and written in batches, never held whole.

Memory is measured with tracemalloc on one frozen eval set of 4,000 questions, importing 1,000 and
then 4,000 rows of about 16 KB each in batches of 200 (the import's batch size, made small so
that both files span many batches): the file grows by some 50 MB, the import's peak by about
2 MB (the per-row scores kept for the run's summary), so the peak grows far less than 4x and far
less than the file. The same holds at the production batch size with 20,000 rows (a slower test,
run with LSL_BENCHMARK=1 beside the 100,000-row import).
"""

from __future__ import annotations

import io
import json
import time
import tracemalloc
from pathlib import Path

import pytest
from django.core.management import call_command

from evalcore.models import EvalSet, EvalSetVersion, Question, Row
from evalcore.services.runs import run_import

pytestmark = pytest.mark.django_db

CONTEXT = "The notice period is fourteen days unless the contract says otherwise. " * 220  # ~16 KB


def frozen_version(n: int) -> EvalSetVersion:
    """A sealed version of n questions, written straight through the ORM (fast set-up, not under test)."""
    eval_set = EvalSet.objects.create(name="big")
    version = EvalSetVersion.objects.create(eval_set=eval_set, number=1, content_hash="b" * 64, question_count=n)
    batch = []
    for i in range(n):
        batch.append(
            Question(
                version=version,
                qid=f"q{i:06d}",
                text=f"Question {i}?",
                qtype=f"t{i % 4}",
                gold=[{"doc": f"d{i}", "grade": 1 + i % 3}],
            )
        )
        if len(batch) == 5000:
            Question.objects.bulk_create(batch)
            batch = []
    Question.objects.bulk_create(batch)
    version.sealed = True
    version.save(update_fields=["sealed"])
    return version


def rows_file(path: Path, n: int) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            handle.write(
                json.dumps(
                    {
                        "id": f"q{i:06d}",
                        "retrieved": [f"d{i + 1}", f"d{i}", f"x{i}", f"y{i}"],
                        "context_ids": [f"d{i + 1}", f"d{i}"],
                        "context": CONTEXT,
                        "answer": "The notice period is fourteen days. " * 5,
                        "claims": [{"text": "Fourteen days.", "supported": i % 3 != 0}],
                    }
                )
                + "\n"
            )
    return path


def traced_import(path: Path, name: str, progress=None) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result = run_import(path=path, evalset="big", name=name, k=2, progress=progress or (lambda *a: None))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def check_streaming(tmp_path, *, questions: int, small_rows: int, big_rows: int, batch: int) -> None:
    import evalcore.services.runs as runs_service

    assert runs_service.BATCH == batch, "set the batch size before calling"
    frozen_version(questions)
    small, big = rows_file(tmp_path / "small.jsonl", small_rows), rows_file(tmp_path / "big.jsonl", big_rows)
    small_result, small_peak = traced_import(small, "small")
    calls: list[tuple[int, int | None, str]] = []
    big_result, big_peak = traced_import(
        big, "big", progress=lambda done, total, message: calls.append((done, total, message))
    )

    run = big_result.run
    assert big_result.created and small_result.created
    assert (run.row_count, run.question_count, run.coverage) == (big_rows, questions, big_rows / questions)
    assert Row.objects.filter(run=run).count() == big_rows
    assert run.summary["slices"]["all"]["metrics"]["recall@2"]["n"] == big_rows
    assert run.summary["slices"]["t3"]["rows"] == big_rows // 4
    assert Row.objects.get(run=run, question__qid="q000003").scores["faithfulness"] == 0.0

    # progress is reported as it goes (k given: one pass that checks and writes each batch), never going back
    writing = [c for c in calls if c[2] == "checking, scoring and writing"]
    assert len(writing) == big_rows // batch == len(calls)
    assert [c[0] for c in writing] == sorted(c[0] for c in writing)
    assert writing[-1][:2] == (big_rows, big_rows)

    file_growth = big.stat().st_size - small.stat().st_size
    peak_growth = big_peak - small_peak
    assert file_growth > 45e6
    assert big_peak < 2 * small_peak, f"peak {small_peak / 1e6:.1f} MB -> {big_peak / 1e6:.1f} MB for 4x the rows"
    assert peak_growth < 0.25 * file_growth, (
        f"peak grew {peak_growth / 1e6:.1f} MB for {file_growth / 1e6:.1f} MB more file"
    )


@pytest.mark.slow  # seconds of subprocesses or simulation: CI runs it (./dev test -m "")
def test_a_run_file_streams_and_its_memory_does_not_grow_with_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr("evalcore.services.runs.BATCH", 200)
    check_streaming(tmp_path, questions=4_000, small_rows=1_000, big_rows=4_000, batch=200)


@pytest.mark.benchmark
def test_a_20000_row_run_file_streams_at_the_production_batch_size(tmp_path):
    """Run with LSL_BENCHMARK=1: the same check with 5,000 and 20,000 rows in batches of 2,000."""
    check_streaming(tmp_path, questions=20_000, small_rows=5_000, big_rows=20_000, batch=2_000)


def test_the_import_run_command_shows_a_progress_bar(db, tmp_path):
    frozen_version(10)
    path = rows_file(tmp_path / "rows.jsonl", 10)
    err = io.StringIO()
    call_command(
        "import_run", str(path), "--evalset", "big", "--name", "r", "--k", "2", stderr=err, stdout=io.StringIO()
    )
    lines = err.getvalue().splitlines()
    assert lines and lines[-1].startswith("import rows.jsonl: [##############################] 100%")


@pytest.mark.benchmark
def test_a_100000_row_run_file_imports(tmp_path):
    """Run with LSL_BENCHMARK=1: 100,000 questions and a 100,000-row file (about 430 MB)."""
    frozen_version(100_000)
    path = rows_file(tmp_path / "huge.jsonl", 100_000)
    started = time.monotonic()
    result = run_import(path=path, evalset="big", name="huge", k=2)
    elapsed = time.monotonic() - started
    assert result.run.row_count == 100_000
    print(f"100,000 rows imported in {elapsed:.1f} s")


@pytest.mark.parametrize("k", [2, None])  # given: one pass that checks as it writes; not given: two passes
def test_a_bad_row_after_batches_were_written_rolls_back_everything_and_every_problem_is_listed(
    tmp_path, monkeypatch, k
):
    from evalcore.models import Run, RunScoreTable
    from evalcore.services.problems import ImportFailed

    monkeypatch.setattr("evalcore.services.runs.BATCH", 50)
    frozen_version(400)
    path = rows_file(tmp_path / "rows.jsonl", 400)
    lines = path.read_text().splitlines()
    lines[249] = lines[249].replace('"claims": [', '"claims": 7, "x": [')  # line 250, after five batches
    lines[389] = '{"id": "q000389", "retrieved": "not a list"}'
    path.write_text("\n".join(lines) + "\n")

    with pytest.raises(ImportFailed) as refused:
        run_import(path=path, evalset="big", name="half", k=k)
    assert [(p.line, p.field) for p in refused.value.problems] == [(250, "claims"), (390, "retrieved")]
    assert not Run.objects.exists() and not Row.objects.exists() and not RunScoreTable.objects.exists()


def test_the_import_run_command_refuses_a_file_over_the_upload_limit_as_the_page_does(db, tmp_path, settings):
    from django.core.management.base import CommandError

    frozen_version(10)
    path = rows_file(tmp_path / "rows.jsonl", 10)
    settings.UPLOAD_MAX_BYTES = path.stat().st_size - 1
    with pytest.raises(CommandError) as refused:
        call_command("import_run", str(path), "--evalset", "big", "--name", "r", "--k", "2", stdout=io.StringIO())
    assert f"rows.jsonl: the file is {path.stat().st_size:,} bytes; the limit is" in str(refused.value)
    assert "(UPLOAD_MAX_BYTES)" in str(refused.value) and not Row.objects.exists()
    settings.UPLOAD_MAX_BYTES = path.stat().st_size
    call_command("import_run", str(path), "--evalset", "big", "--name", "r", "--k", "2", stdout=io.StringIO())
    assert Row.objects.count() == 10
