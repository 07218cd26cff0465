"""Disagreement exports a prompt tuner uses as they are: OpenAI's fine-tuning chat JSONL (checked by the rules
of OpenAI's own format check), dspy.Example records with their inputs named, and Langfuse dataset items
(checked against the schema of Langfuse's own request model, CreateDatasetItemRequest). The dspy checks
stand in for dspy: they make what real dspy made of the committed exports (tests/fixtures/exports)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from labelstudio_lite.labelling.models import ExportRecord
from labelstudio_lite.labelling.services.exports import disagreements_export
from tests import factories

pytestmark = pytest.mark.django_db
SCHEMAS = Path(__file__).resolve().parents[1] / "fixtures" / "exports"
ROLES = {"system", "user", "assistant", "tool", "function"}
MESSAGE_KEYS = {"role", "content", "name", "function_call", "weight", "tool_calls", "tool_call_id"}


def openai_chat_problems(text: str) -> list[str]:
    """Every way a file breaks OpenAI's chat fine-tuning format (the checks of its cookbook's format check:
    a messages list, known roles and keys, content that is non-empty text, an assistant answer, and the order
    system?, then user and assistant turns, ending on the assistant's)."""
    problems = []
    for number, line in enumerate(text.splitlines(), start=1):
        record = json.loads(line)
        if set(record) - {"messages", "tools", "parallel_tool_calls", "functions"}:
            problems.append(f"{number}: unknown keys {set(record) - {'messages'}}")
        messages = record.get("messages")
        if not isinstance(messages, list) or not messages:
            problems.append(f"{number}: no messages")
            continue
        roles = [m.get("role") for m in messages]
        for m in messages:
            if set(m) - MESSAGE_KEYS or m.get("role") not in ROLES:
                problems.append(f"{number}: bad message keys or role {m}")
            if not isinstance(m.get("content"), str) or not m["content"].strip():
                problems.append(f"{number}: empty content in {m.get('role')}")
        turns = roles[1:] if roles[0] == "system" else roles
        if any(role != ("user" if i % 2 == 0 else "assistant") for i, role in enumerate(turns)) or turns[-1:] != [
            "assistant"
        ]:
            problems.append(f"{number}: roles out of order {roles}")
    return problems


@pytest.fixture
def campaign(tmp_path, owner):
    case = factories.make_spec_case(folder=tmp_path)
    return factories.make_spec_campaign(case=case, name="faith", folder=tmp_path, user=owner)


def test_the_openai_export_passes_every_rule_of_openais_fine_tuning_format(campaign):
    record = disagreements_export(campaign=campaign, fmt="openai")
    assert len(record.content.splitlines()) == 30
    assert openai_chat_problems(record.content) == []
    assert record.kind == ExportRecord.Kind.DISAGREEMENTS and len(record.item_ids) == 30  # recorded as every export


def test_the_format_check_is_a_real_check():
    bad = [
        {"messages": [{"role": "user", "content": "q"}]},  # no assistant answer
        {"messages": [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}]},  # order
        {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": " "}]},  # empty
        {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}], "metadata": {}},
    ]
    assert len(openai_chat_problems("\n".join(json.dumps(b) for b in bad))) == 4


def test_the_dspy_export_names_its_inputs_and_every_example_holds_them_and_a_label(campaign):
    document = json.loads(disagreements_export(campaign=campaign, fmt="dspy").content)
    assert document["inputs"] == ["question", "context", "answer"]  # an answer campaign
    assert len(document["examples"]) == 30
    for example in document["examples"]:
        assert set(document["inputs"]) <= set(example)  # dspy.Example(**e).with_inputs(*inputs)
        assert example["label"] in ("supported", "unsupported") and example["rationale"]


# dspy.Example, as its documentation and dspy/primitives/example.py (dspy 3.4) define it, without dspy: the
# committed exports (tests/fixtures/exports/dspy_export_*.json) were read by real dspy in
# tests/fixtures/regenerate_eval_tools.py (``dspy``), which wrote what it made of them to dspy_examples.json.
DSPY = json.loads((SCHEMAS / "dspy_examples.json").read_text())
DSPY_SAMPLES = ("dspy_export_answer.json", "dspy_export_claim.json")


def as_dspy_reads_it(document: dict) -> list[dict]:
    """``dspy.Example(**e).with_inputs(*document["inputs"])`` for each example, by dspy's rules: the fields are
    stored as given; ``keys()`` and ``len()`` leave out names starting with ``dspy_``; ``inputs()`` holds the
    fields ``with_inputs`` named, ``labels()`` every other; dot access finds a field unless a method of
    Example has its name (``example.labels`` is the method)."""
    made = []
    for example in document["examples"]:
        keys = [k for k in example if not k.startswith("dspy_")]
        made.append(
            {
                "keys": keys,
                "inputs": {k: v for k, v in example.items() if k in document["inputs"]},
                "labels": {k: v for k, v in example.items() if k not in document["inputs"]},
                "dot_access": {k: example[k] for k in keys if k not in DSPY["attributes"]},
                "len": len(keys),
            }
        )
    return made


def dspy_problems(document: dict) -> list[str]:
    """Every way an export would not make the trainset it says: a missing or empty input, a field dspy hides or
    that dot access cannot reach, a field that is not a Python name (``dspy.Example(**e)`` and ``e.name``)."""
    problems = []
    if set(document) != {"format", "inputs", "examples"} or document["format"] != "dspy.Example":
        problems.append(f"the document holds {sorted(document)}")
    for number, (example, made) in enumerate(zip(document["examples"], as_dspy_reads_it(document)), start=1):
        if list(made["inputs"]) != [k for k in example if k in document["inputs"]] or set(made["inputs"]) != set(
            document["inputs"]
        ):
            problems.append(f"{number}: inputs {sorted(made['inputs'])}, not {document['inputs']}")
        if any(v in (None, "", []) for v in made["inputs"].values()):
            problems.append(f"{number}: an empty input")
        if not {"label", "rationale"} <= set(made["labels"]) or not made["labels"]["rationale"]:
            problems.append(f"{number}: no label with its rationale")
        if set(made["dot_access"]) != set(example) or not all(k.isidentifier() for k in example):
            problems.append(
                f"{number}: fields dot access cannot reach: {sorted(set(example) - set(made['dot_access']))}"
            )
    return problems


@pytest.mark.parametrize("sample", DSPY_SAMPLES)
def test_dspys_rules_as_written_here_make_what_real_dspy_made_of_the_same_exports(sample):
    document = json.loads((SCHEMAS / sample).read_text())
    assert DSPY["dspy"].startswith("3.")
    assert as_dspy_reads_it(document) == DSPY[sample]  # so the checks below stand in for dspy
    assert dspy_problems(document) == []


def test_the_dspy_export_has_the_shape_real_dspy_read(campaign, tmp_path, owner, annotator):
    run = factories.make_marked_run(folder=tmp_path / "marked", n=4, evalset="mk")
    claims = factories.make_campaign(run=run, name="claims", unit="claim", user=owner, annotators=[annotator])
    factories.label_items(campaign=claims, user=annotator, value="unsupported", rationale="not in the context")
    for exported, sample in ((campaign, "dspy_export_answer.json"), (claims, "dspy_export_claim.json")):
        document = json.loads(disagreements_export(campaign=exported, fmt="dspy").content)
        read = json.loads((SCHEMAS / sample).read_text())
        assert dspy_problems(document) == []
        assert (document["format"], document["inputs"]) == (read["format"], read["inputs"])
        shape = {k: type(v) for k, v in read["examples"][0].items()}
        for example in document["examples"]:  # the same fields in the same order, of the same types
            assert list(example) == list(shape)
            assert all(isinstance(example[k], kind) or example[k] is None for k, kind in shape.items()), example
        assert [m["keys"] for m in as_dspy_reads_it(document)] == [DSPY[sample][0]["keys"]] * len(document["examples"])


def test_the_dspy_checks_are_real_checks():
    good = json.loads((SCHEMAS / "dspy_export_answer.json").read_text())
    example = good["examples"][0]
    broken = [
        {**good, "examples": [{k: v for k, v in example.items() if k != "context"}]},  # an input missing
        {**good, "examples": [{**example, "answer": ""}]},  # an empty input
        {**good, "examples": [{**example, "labels": "x"}]},  # shadowed by Example.labels
        {**good, "examples": [{**example, "dspy_uuid": "x"}]},  # hidden by keys()
        {**good, "examples": [{**example, "question id": "x"}]},  # not a Python name
        {**good, "examples": [{k: v for k, v in example.items() if k != "rationale"}]},  # no rationale
    ]
    assert [len(dspy_problems(document)) for document in broken] == [1] * len(broken)


def test_the_langfuse_export_is_langfuses_dataset_item_request_body(campaign):
    schema = json.loads((SCHEMAS / "langfuse_create_dataset_item.schema.json").read_text())
    lines = [json.loads(line) for line in disagreements_export(campaign=campaign, fmt="langfuse").content.splitlines()]
    assert len(lines) == 30 and len({item["id"] for item in lines}) == 30
    for item in lines:
        jsonschema.validate(item, schema)
        assert set(item) <= set(schema["properties"])  # the model takes other keys too: ours are all its own
        assert item["dataset_name"] == "faith-disagreements"
        assert item["expected_output"]["label"] in ("supported", "unsupported")
