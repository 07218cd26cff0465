"""Disagreement exports a prompt tuner uses as they are: OpenAI's fine-tuning chat JSONL (checked by the rules
of OpenAI's own format check), dspy.Example records with their inputs named, and Langfuse dataset items
(checked against the schema of Langfuse's own request model, CreateDatasetItemRequest)."""

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


def test_the_langfuse_export_is_langfuses_dataset_item_request_body(campaign):
    schema = json.loads((SCHEMAS / "langfuse_create_dataset_item.schema.json").read_text())
    lines = [json.loads(line) for line in disagreements_export(campaign=campaign, fmt="langfuse").content.splitlines()]
    assert len(lines) == 30 and len({item["id"] for item in lines}) == 30
    for item in lines:
        jsonschema.validate(item, schema)
        assert set(item) <= set(schema["properties"])  # the model takes other keys too: ours are all its own
        assert item["dataset_name"] == "faith-disagreements"
        assert item["expected_output"]["label"] in ("supported", "unsupported")
