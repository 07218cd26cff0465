"""The evaluation tools' files, as the real libraries wrote them (tests/fixtures/, made by
tests/fixtures/regenerate_eval_tools.py): promptfoo results, Inspect AI logs, MLflow evaluation results,
Phoenix span annotations and datasets, Opik dataset and experiment items, Hugging Face datasets, BEIR
and MS MARCO. Each is told from its content, imports through every door (the command, the upload page,
the API) to the same questions and rows, and what does not map is refused with its line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from evalcore.models import EvalSetVersion, Job, Question, Row, Run
from evalcore.services.evalsets import evalset_import
from evalcore.services.problems import ImportFailed
from evalcore.services.readers import detect_format
from evalcore.services.runs import run_import
from evalcore.services.tools.huggingface import dataset_file

from .conftest import refused

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TEXTS = {
    "q1": "What is the notice period for plan A2?",
    "q2": "How do I cancel an order?",
    "q3": "Is there a student discount?",
}
REFERENCES = {"q1": "30 days.", "q2": "From the orders page, before it ships.", "q3": "No."}
ANSWERS = {"q1": "The notice period is 30 days.", "q2": "Use the orders page.", "q3": "Yes, 10 %."}
RETRIEVED = {"q1": ["doc017#4", "doc112#0"], "q2": ["doc090#2", "doc033#1", "doc017#4"], "q3": ["doc200#0"]}

pytestmark = pytest.mark.django_db

#: (file, format told from the content, options) for each file that holds questions
QUESTION_FILES = [
    ("promptfoo/results.json", "promptfoo", {}),
    ("promptfoo/results.jsonl", "promptfoo", {}),
    ("inspect/support_rag.eval", "inspect", {}),
    ("inspect/support_rag.json", "inspect", {}),
    ("mlflow/result_df.jsonl", "mlflow", {}),
    ("mlflow/data.json", "mlflow-data", {}),
    ("phoenix/dataset.jsonl", "phoenix-dataset", {}),
    ("phoenix/dataset.csv", "phoenix-dataset", {}),
    ("opik/dataset.json", "jsonl", {"fmt": "opik"}),  # Opik's items are the user's fields and an id
    ("opik/experiment_items.json", "opik", {}),
    ("huggingface/support_qa.arrow", "huggingface", {}),
    ("huggingface/support_qa.parquet", "huggingface", {}),
    ("huggingface/squad_shape.parquet", "huggingface", {}),
]
#: (file, format, options) for each file that holds a run's rows, and whether it keeps retrieved ids and answers
RUN_FILES = [
    ("promptfoo/results.json", "promptfoo", {"k": 1}, False),
    ("inspect/support_rag.eval", "inspect", {}, True),
    ("inspect/support_rag.json", "inspect", {}, True),
    ("inspect/support_rag_two_epochs.eval", "inspect", {}, True),
    ("mlflow/result_df.json", "mlflow", {}, True),
    ("mlflow/result_df.jsonl", "mlflow", {}, True),
    ("phoenix/span_annotations.parquet", "phoenix", {}, False),
    ("phoenix/span_annotations.csv", "phoenix", {}, False),
    ("opik/experiment_items.json", "opik", {}, True),
]


@pytest.fixture
def support():
    """The eval set every fixture is about (q1 to q3, with gold), from Langfuse dataset items."""
    return evalset_import(path=FIXTURES / "langfuse" / "dataset_items.jsonl", name="support").version


@pytest.mark.parametrize(("file", "fmt", "options"), QUESTION_FILES)
def test_each_tools_questions_import_with_their_text_and_reference(file, fmt, options):
    if "fmt" not in options:
        assert detect_format(FIXTURES / file, door="questions") == fmt
    version = evalset_import(path=FIXTURES / file, name="from-tool", **options).version
    questions = {q.text: q for q in Question.objects.filter(version=version)}
    assert set(questions) == set(TEXTS.values())
    for qid, text in TEXTS.items():
        assert questions[text].reference_answer == REFERENCES[qid]


@pytest.mark.parametrize(
    "file", ["inspect/support_rag.eval", "mlflow/data.json", "phoenix/dataset.csv", "huggingface/support_qa.arrow"]
)
def test_tools_that_keep_our_question_ids_import_them_and_gold_where_they_hold_it(file):
    version = evalset_import(path=FIXTURES / file, name="ids").version
    assert set(version.questions.values_list("qid", flat=True)) == {"q1", "q2", "q3"}
    if "inspect" not in file:  # Inspect samples keep no gold
        assert version.questions.get(qid="q2").gold == [
            {"doc": "doc033#1", "grade": 1},
            {"doc": "doc034#0", "grade": 1},
        ]


def test_an_opik_experiments_items_name_the_questions_its_dataset_made():
    from_dataset = evalset_import(path=FIXTURES / "opik/dataset.json", name="opik", fmt="opik").version
    assert set(from_dataset.questions.values_list("qid", flat=True)) == {"q1", "q2", "q3"}
    run = run_import(path=FIXTURES / "opik/experiment_items.json", evalset="opik", name="exp").run
    row = Row.objects.get(run=run, question__qid="q3")
    assert row.scores["hallucination"] == 1.0 and row.scores["answer_relevance"] == pytest.approx(0.88)
    assert row.metadata["opik_feedback"]["hallucination"] == {"reason": "judged"}


@pytest.mark.parametrize(("file", "fmt", "options", "retrieval"), RUN_FILES)
def test_each_tools_results_import_as_a_run_with_their_answers_and_scores(support, file, fmt, options, retrieval):
    assert detect_format(FIXTURES / file, door="run") == fmt
    result = run_import(path=FIXTURES / file, evalset="support", name="r", **options)
    rows = {row.question.qid: row for row in Row.objects.filter(run=result.run).select_related("question")}
    assert set(rows) == {"q1", "q2", "q3"}
    for qid, row in rows.items():
        assert row.answer == ANSWERS[qid]
        if retrieval:
            assert row.retrieved == RETRIEVED[qid]
    judge = {"promptfoo": "faithfulness", "inspect": "faithfulness", "mlflow": "faithfulness"}.get(fmt)
    if judge:  # the tool's own judge: faithful on q1 only
        assert [rows[q].scores[judge] for q in ("q1", "q2", "q3")] == [1.0, 0.0, 0.0]
    if retrieval:
        assert rows["q2"].scores["rr"] == pytest.approx(0.5) and rows["q1"].scores["rr"] == 1.0


def test_inspect_letters_score_as_inspect_reads_them_and_epochs_are_averaged(support):
    run = run_import(path=FIXTURES / "inspect/support_rag_two_epochs.eval", evalset="support", name="r").run
    q1 = Row.objects.get(run=run, question__qid="q1")
    assert q1.scores["mentions_reference"] == 1.0  # "C"
    assert len(q1.metadata["inspect_epochs"]) == 2
    assert q1.metadata["inspect_scores"]["mentions_reference"]["explanation"] == "the reference is in the answer"


def test_mlflow_yes_no_feedback_scores_one_and_zero_and_keeps_its_rationale(support):
    run = run_import(path=FIXTURES / "mlflow/result_df.jsonl", evalset="support", name="r").run
    q2 = Row.objects.get(run=run, question__qid="q2")
    assert q2.scores["faithfulness"] == 0.0 and q2.scores["answer_overlap"] == pytest.approx(0.2857)
    assert q2.metadata["mlflow_rationales"]["faithfulness"] == "in no chunk"
    assert "expected_response" not in q2.scores  # an expectation, not a score


def test_a_deepeval_like_k_from_the_chunks_a_tool_lists(support):
    result = run_import(path=FIXTURES / "inspect/support_rag.eval", evalset="support", name="r")
    assert result.run.k == 3 and "from the sample's contexts" in result.message


def test_promptfoo_results_of_several_providers_are_refused_with_what_they_hold(support):
    refused(
        lambda: run_import(path=FIXTURES / "promptfoo/two_providers.json", evalset="support", name="r", k=1),
        file="two_providers.json",
        line=266,  # the first result of the second provider
        field="provider",
        says="several providers or prompts",
    )


def test_phoenix_annotations_without_their_spans_question_say_how_to_join_them(support):
    refused(
        lambda: run_import(path=FIXTURES / "phoenix/span_annotations_alone.csv", evalset="support", name="r"),
        file="span_annotations_alone.csv",
        line=7,  # the first LLM annotation (the HUMAN ones before it are labels, not the run's)
        field="span_id",
        says="join the spans dataframe first",
    )


def test_phoenix_human_annotations_are_left_to_import_labels(support):
    run = run_import(path=FIXTURES / "phoenix/span_annotations.parquet", evalset="support", name="r").run
    row = Row.objects.get(run=run, question__qid="q3")
    assert row.scores["faithfulness"] == 0.0 and "support" not in row.scores
    assert row.metadata["phoenix_annotations"]["faithfulness"]["label"] == "hallucinated"


# ---------------------------------------------------------------------------------------------
# Hugging Face, BEIR, MS MARCO
# ---------------------------------------------------------------------------------------------


def test_a_dataset_saved_to_disk_is_read_from_its_folder_and_a_dataset_dict_names_its_splits():
    saved = FIXTURES / "huggingface/support_qa_saved"
    assert dataset_file(saved) == saved / "data-00000-of-00001.arrow"
    with pytest.raises(ImportFailed, match="is a DatasetDict with splits test, train; give one split's folder"):
        dataset_file(FIXTURES / "huggingface/support_qa_dict")
    call_command("import_evalset", str(saved), "--name", "hf")
    assert EvalSetVersion.objects.get(eval_set__name="hf").question_count == 3


def test_beir_qrels_with_its_queries_make_the_eval_set_and_its_corpus_is_refused():
    version = evalset_import(
        path=FIXTURES / "beir/qrels/test.tsv", name="beir", topics_path=FIXTURES / "beir/queries.jsonl"
    ).version
    q3 = version.questions.get(qid="q3")
    assert q3.text == TEXTS["q3"]
    assert q3.gold == [{"doc": "doc201#3", "grade": 1}, {"doc": "doc200#0", "grade": 0}]
    with pytest.raises(ImportFailed, match="BEIR corpus export, which holds documents, not questions"):
        detect_format(FIXTURES / "beir/corpus.jsonl", door="questions")


def test_ms_marco_qrels_queries_and_run_score_mrr_at_10_by_default():
    evalset_import(
        path=FIXTURES / "msmarco/qrels.dev.small.tsv",
        name="marco",
        topics_path=FIXTURES / "msmarco/queries.dev.small.tsv",
    )
    result = run_import(path=FIXTURES / "msmarco/run.dev.small.tsv", evalset="marco", name="bm25")
    assert result.run.summary["cutoffs"] == [10]
    rr = dict(Row.objects.filter(run=result.run).values_list("question__qid", "scores__rr@10"))
    assert rr == {"1000": 1.0, "1001": 0.5, "1002": 0.0}
    with pytest.raises(ImportFailed, match="holds queries"):
        detect_format(FIXTURES / "msmarco/queries.dev.small.tsv", door="questions")


# ---------------------------------------------------------------------------------------------
# Every door: the command, the upload page, the API
# ---------------------------------------------------------------------------------------------

DOOR_RUNS = [(file, options) for file, _, options, _ in RUN_FILES] + [("msmarco/run.dev.small.tsv", {})]


def _upload(file: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(Path(file).name, (FIXTURES / file).read_bytes())


def _marco():
    return evalset_import(
        path=FIXTURES / "msmarco/qrels.dev.small.tsv",
        name="support",
        topics_path=FIXTURES / "msmarco/queries.dev.small.tsv",
    )


@pytest.mark.parametrize(("file", "options"), DOOR_RUNS)
@pytest.mark.parametrize("door", ["command", "page", "api"])
def test_every_door_imports_each_tools_run(owner_client, support_or_marco, file, options, door):
    support_or_marco(file)
    fields = {"evalset": "support", "name": "via-door", **({"k": options["k"]} if "k" in options else {})}
    if door == "command":
        call_command("import_run", str(FIXTURES / file), *sum((["--" + k, str(v)] for k, v in fields.items()), []))
    elif door == "page":
        response = owner_client.post(reverse("evalcore:runs"), {**fields, "file": _upload(file)})
        assert response.status_code == 302, response.content.decode()[:2000]
    else:
        response = owner_client.post("/api/runs/import/", {**fields, "file": _upload(file)})
        assert response.status_code == 202, response.json()
    if door != "command":
        job = Job.objects.latest("created_at")
        assert job.status == "succeeded", job.error
    assert Run.objects.get(name="via-door").row_count == 3


@pytest.fixture
def support_or_marco(db):
    def make(file: str) -> None:
        if "msmarco" in file:
            _marco()
        else:
            evalset_import(path=FIXTURES / "langfuse" / "dataset_items.jsonl", name="support")

    return make


@pytest.mark.parametrize(("file", "fmt", "options"), [q for q in QUESTION_FILES if "fmt" not in q[2]])
@pytest.mark.parametrize("door", ["command", "page", "api"])
def test_every_door_imports_each_tools_questions(owner_client, file, fmt, options, door):
    if door == "command":
        call_command("import_evalset", str(FIXTURES / file), "--name", "via-door")
    elif door == "page":
        response = owner_client.post(reverse("evalcore:evalsets"), {"name": "via-door", "file": _upload(file)})
        assert response.status_code == 302
    else:
        response = owner_client.post("/api/evalsets/import/", {"name": "via-door", "file": _upload(file)})
        assert response.status_code == 202, response.json()
    assert EvalSetVersion.objects.get(eval_set__name="via-door").question_count == 3


def test_the_api_takes_the_new_formats_by_name(owner_client):
    response = owner_client.post(
        "/api/evalsets/import/", {"name": "named", "file": _upload("opik/dataset.json"), "format": "opik"}
    )
    assert response.status_code == 202, response.json()
    assert EvalSetVersion.objects.get(eval_set__name="named").questions.filter(qid="q1").exists()
    schema = owner_client.get("/api/schema/?format=json").json()
    formats = json.dumps(schema)
    assert all(name in formats for name in ("promptfoo", "inspect", "mlflow", "phoenix", "opik", "huggingface"))
