"""Exports of the tools users already have, as the real libraries write them (tests/fixtures/, made by
tests/fixtures/regenerate.py): Ragas result tables saved every usual way, DeepEval test runs and goldens,
Langfuse dataset items, LangSmith examples; JSON arrays wherever JSON Lines is; a tool's export read as
another format is refused with the format to use, never imported wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore.models import Question, Row
from evalcore.services.evalsets import evalset_import
from evalcore.services.fields import FieldError, parse_list_cell
from evalcore.services.problems import ImportFailed
from evalcore.services.readers import detect_format
from evalcore.services.runs import run_import
from tests.factories import QUESTIONS

from .conftest import refused

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RAGAS = FIXTURES / "ragas"
DEEPEVAL = FIXTURES / "deepeval"

#: Every way a Ragas 0.4 result (EvaluationResult.to_pandas()) is saved, each read with no --format.
RAGAS_RUN1 = [
    "run1_to_csv.csv",  # pandas' default to_csv: an "Unnamed: 0" index column, lists as Python literals
    "run1.parquet",
    "run1_parquet_then_csv.csv",  # numpy arrays as "['doc017#4' 'doc112#0']"
    "run1_records.json",  # to_json(orient="records"): a JSON array
    "run1.jsonl",
    "run1_with_id.csv",  # an id column: still a Ragas table, not plain rows
]

pytestmark = pytest.mark.django_db


def ragas_eval_set(source: str = "run1.parquet"):
    return evalset_import(path=RAGAS / source, name="ragas-set").version


@pytest.mark.parametrize("name", RAGAS_RUN1)
def test_every_saved_form_of_a_ragas_result_imports_the_same_run(name):
    ragas_eval_set("run1_with_id.csv" if "with_id" in name else "run1.parquet")  # ids, or the text's ids
    run = run_import(path=RAGAS / name, evalset="ragas-set", name="r1").run
    assert run.row_count == 3 and run.k == 3
    rows = {row.question.text: row for row in Row.objects.filter(run=run).select_related("question")}
    first = rows["What is the notice period for plan A2?"]
    assert first.retrieved == ["doc017#4", "doc112#0"] and first.context_ids == ["doc017#4", "doc112#0"]
    assert first.metadata["context_chunks"] == ["Plan A2: notice 30 days.", "Plan B: 60 days."]
    assert first.answer == "The notice period is 30 days."
    assert first.scores["faithfulness"] == 1.0 and first.scores["answer_relevancy"] == pytest.approx(0.93)
    assert first.scores["recall@3"] == 1.0 and first.scores["rr"] == 1.0  # gold from reference_context_ids
    assert "Unnamed: 0" not in first.scores and "Unnamed: 0" not in run.summary["metrics"]
    second = rows["How do I cancel an order?"]
    assert second.scores["context_recall"] is None  # NaN: a metric Ragas could not compute
    assert second.scores["rr"] == pytest.approx(0.5) and second.scores["recall@3"] == pytest.approx(0.5)


def test_a_ragas_table_as_the_eval_set_maps_reference_context_ids_to_gold_and_keeps_scores_out():
    version = ragas_eval_set()
    q2 = Question.objects.get(version=version, text="How do I cancel an order?")
    assert q2.gold == [{"doc": "doc033#1", "grade": 1}, {"doc": "doc034#0", "grade": 1}]
    assert q2.reference_answer == "From the orders page, before it ships."
    assert not set(q2.metadata) & {"faithfulness", "answer_relevancy", "Unnamed: 0", "retrieved_context_ids"}


@pytest.mark.parametrize(
    "second", ["run2_to_csv.csv", "run2.parquet", "run2_parquet_then_csv.csv", "run2_records.json"]
)
def test_a_second_runs_ragas_table_is_nothing_new_for_the_eval_set(second):
    first = evalset_import(path=RAGAS / "run1_to_csv.csv", name="ragas-set")
    again = evalset_import(path=RAGAS / second, name="ragas-set")
    assert first.created and not again.created
    assert again.version == first.version and again.message.startswith("Nothing new")


def test_a_ragas_table_read_as_plain_rows_is_refused_with_the_format_to_use():
    ragas_eval_set()
    refused(
        lambda: run_import(path=RAGAS / "run1_with_id.csv", evalset="ragas-set", name="r1", fmt="csv"),
        file="run1_with_id.csv",
        says="this looks like a Ragas result table export, not CSV; use --format ragas",
    )


def test_a_list_numpy_shortened_with_dots_is_refused_with_its_line_and_field():
    ragas_eval_set()
    refused(
        lambda: run_import(path=RAGAS / "shortened_list.csv", evalset="ragas-set", name="r1"),
        file="shortened_list.csv",
        line=2,
        field="retrieved_context_ids",
        says="numpy shortened with '...'",
    )


# ---------------------------------------------------------------------------------------------
# List cells
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "items"),
    [
        ('["a", "b"]', ["a", "b"]),  # JSON
        ("['a, b', 'c']", ["a, b", "c"]),  # Python (pandas' to_csv)
        ("['doc017#4' 'doc112#0']", ["doc017#4", "doc112#0"]),  # numpy: not Python's ['doc017#4doc112#0']
        ("['it\\'s' 'x'\n 'y']", ["it's", "x", "y"]),  # numpy wraps long arrays over lines
        ("[1 2 -3.5]", [1, 2, -3.5]),
        ("[]", []),
    ],
)
def test_a_list_cell_is_read_when_it_can_mean_one_list_only(cell, items):
    assert parse_list_cell(cell, "f") == items


@pytest.mark.parametrize(
    ("cell", "says"),
    [
        ("['a' 'b' ... 'z']", "numpy shortened"),
        ("['a', 'b'", "malformed JSON"),
        ("['a', 'b' 'c']", "not a Python or numpy list"),  # commas, and then none: which is it?
        ("[a, b]", "not a Python or numpy list"),
    ],
)
def test_a_list_cell_that_cannot_be_read_unambiguously_is_refused(cell, says):
    with pytest.raises(FieldError, match=says):
        parse_list_cell(cell, "f")


# ---------------------------------------------------------------------------------------------
# JSON arrays wherever JSON Lines is
# ---------------------------------------------------------------------------------------------


def test_a_json_array_of_questions_imports_the_same_content_as_json_lines(tmp_path, questions_file):
    array = tmp_path / "questions.json"
    array.write_text(json.dumps(QUESTIONS, indent=2))
    from_array = evalset_import(path=array, name="a").version
    assert from_array.content_hash == evalset_import(path=questions_file, name="b").version.content_hash


def test_a_bad_record_of_a_json_array_is_reported_with_the_line_it_starts_on(tmp_path):
    array = tmp_path / "questions.json"
    records = [QUESTIONS[0], {**QUESTIONS[1], "gold": [{"doc": "d2", "grade": "high"}]}]
    array.write_text(json.dumps(records, indent=2))
    start = array.read_text().splitlines().index("  {", 2) + 1
    refused(lambda: evalset_import(path=array, name="a"), file="questions.json", line=start, field="gold[0].grade")


def test_a_malformed_json_array_is_refused_with_its_line(tmp_path):
    array = tmp_path / "questions.json"
    array.write_text('[\n{"id": "q1", "question": "A?"},\n{"id": "q2", "question": }\n]')
    refused(lambda: evalset_import(path=array, name="a"), file="questions.json", line=3, says="malformed JSON")


# ---------------------------------------------------------------------------------------------
# DeepEval, Langfuse, LangSmith
# ---------------------------------------------------------------------------------------------


def test_deepeval_goldens_in_every_format_import_the_same_eval_set():
    hashes = {
        name: evalset_import(path=DEEPEVAL / name, name=f"g-{name.replace('.', '-')}").version.content_hash
        for name in ("goldens.json", "goldens.jsonl", "goldens.csv")
    }
    assert len(set(hashes.values())) == 1
    question = Question.objects.filter(text="How do I cancel an order?").first()
    assert question.reference_answer == "From the orders page, before it ships."
    assert question.metadata["context"] == ["doc033#1 text", "doc034#0 text"]  # CSV joins them with "|"


def test_a_deepeval_test_run_imports_as_a_run_with_its_metrics_as_judge_scores():
    evalset_import(path=DEEPEVAL / "goldens.json", name="de")
    result = run_import(path=DEEPEVAL / "test_run_20261130_120000.json", evalset="de", name="de-run", k=3)
    row = Row.objects.get(run=result.run, question__text="Is there a student discount?")
    assert row.answer == "Yes, 10 %." and row.metadata["context_chunks"] == ["Discounts for teachers."]
    assert row.scores["Faithfulness"] == 0.0 and row.scores["Answer Relevancy"] == pytest.approx(0.88)
    assert row.metadata["deepeval_metrics"]["Faithfulness"]["threshold"] == 0.5
    assert result.run.row_count == 3


def test_langfuse_dataset_items_become_questions_with_their_ids_answers_and_gold():
    version = evalset_import(path=FIXTURES / "langfuse" / "dataset_items.jsonl", name="lf").version
    q2 = Question.objects.get(version=version, qid="q2")
    assert q2.text == "How do I cancel an order?" and q2.reference_answer == "From the orders page, before it ships."
    assert q2.qtype == "policy" and [g["doc"] for g in q2.gold] == ["doc033#1", "doc034#0"]


def test_langsmith_examples_become_questions():
    version = evalset_import(path=FIXTURES / "langsmith" / "examples.json", name="ls").version
    assert set(version.questions.values_list("qid", flat=True)) == {"q1", "q2", "q3"}
    assert version.questions.get(qid="q3").reference_answer == "No."


@pytest.mark.parametrize(
    ("file", "door", "says"),
    [
        (
            "label_studio/export.json",
            "run",
            "a Label Studio export, which holds labels; import it with import_labels",
        ),
        ("langfuse/dataset_items.jsonl", "run", "import it with import_evalset --format langfuse"),
        ("argilla/records_flat.json", "questions", "import it with import_labels --format argilla"),
    ],
)
def test_an_export_given_to_the_wrong_command_is_refused_with_the_command_to_use(file, door, says):
    with pytest.raises(ImportFailed, match=says):
        detect_format(FIXTURES / file, door=door)


def test_trec_files_are_known_by_their_extension_or_their_content(tmp_path):
    run = tmp_path / "bm25.res"
    run.write_text("301 Q0 FBIS3-1 1 12.5 bm25\n")
    assert detect_format(run, door="run") == "trec-run"
    text = tmp_path / "bm25.txt"
    text.write_text("301 Q0 FBIS3-1 1 12.5 bm25\n")
    assert detect_format(text, door="run") == "trec-run"
    qrels = tmp_path / "judged.txt"
    qrels.write_text("301 0 FBIS3-1 1\n")
    assert detect_format(qrels, door="questions") == "trec-qrels"


def test_langfuse_eval_scores_become_a_runs_judge_scores_and_annotations_are_left_to_import_labels():
    evalset_import(path=FIXTURES / "langfuse" / "dataset_items.jsonl", name="lf")
    run = run_import(path=FIXTURES / "langfuse" / "scores.jsonl", evalset="lf", name="lf-judge").run
    assert run.row_count == 3
    q3 = Row.objects.get(run=run, question__qid="q3")
    assert q3.scores["faithfulness"] == 0.0 and "support" not in q3.scores
    assert q3.metadata["langfuse_traces"] == ["trace-q3"]


def test_the_api_refuses_an_export_meant_for_another_command_before_any_job_starts(owner_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from evalcore.models import Job

    response = owner_client.post(
        "/api/evalsets/import/",
        {
            "file": SimpleUploadedFile("export.json", (FIXTURES / "label_studio" / "export.json").read_bytes()),
            "name": "x",
        },
    )
    assert response.status_code == 400
    assert "import it with import_labels --format label-studio" in json.dumps(response.json())
    assert not Job.objects.exists()


def test_a_json_array_on_one_line_longer_than_the_line_limit_is_read(tmp_path, settings, questions_file):
    settings.IMPORT_MAX_LINE_BYTES = 200  # pandas' to_json(orient="records") writes the whole array on one line
    array = tmp_path / "questions.json"
    array.write_text(json.dumps(QUESTIONS))
    assert len(array.read_bytes()) > 200 and "\n" not in array.read_text()
    assert evalset_import(path=array, name="a").version.question_count == len(QUESTIONS)


def test_a_json_array_that_is_not_utf8_is_refused_with_its_line(tmp_path):
    array = tmp_path / "questions.json"
    array.write_bytes(b'[\n{"id": "q1", "question": "A?"},\n{"id": "q2", "question": "B\xe9?"}\n]')
    refused(
        lambda: evalset_import(path=array, name="a"), file="questions.json", line=3, says="not UTF-8 text (byte 0xe9"
    )


def test_a_deepeval_test_run_imports_without_k_taking_k_from_its_retrieval_context():
    evalset_import(path=DEEPEVAL / "goldens.json", name="de")
    result = run_import(path=DEEPEVAL / "test_run_20261130_120000.json", evalset="de", name="de-run")
    assert result.run.k == 3  # the second test case gave the model three chunks
    assert "k=3 (from retrievalContext: the most chunks a row gave the model)" in result.message


@pytest.mark.parametrize(
    ("file", "fmt", "says"),
    [
        ("ragas/run1.jsonl", "json", "this looks like a Ragas result table export, not JSON; use --format ragas"),
        ("ragas/run1.jsonl", "jsonl", "not JSON Lines; use --format ragas"),
        ("ragas/run1.jsonl", "parquet", "run1.jsonl: is not a Parquet file (it holds JSON text"),
        ("ragas/run1.parquet", "csv", "run1.parquet: is a Parquet file, not CSV; use --format parquet"),
        ("argilla/records_flat.json", "csv", "this looks like an Argilla records export, not CSV"),
    ],
)
def test_a_format_named_against_the_content_is_refused_in_words(file, fmt, says):
    with pytest.raises(ImportFailed) as refusal:
        detect_format(FIXTURES / file, fmt, door="run" if "ragas" in file else "labels")
    assert says in str(refusal.value)
