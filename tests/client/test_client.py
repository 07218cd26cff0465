"""The Python client (client/labelstudio_lite_client) against the live test server: eval sets and runs from
pandas DataFrames, a gate whose job it follows with progress, a judge report and a disagreement export,
and the API's refusals raised in its own words (file, line and field)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from labelstudio_lite_client import ApiError, Client

from labelstudio_lite.accounts.tokens import token_create
from labelstudio_lite.labelling.models import ExportRecord
from tests import factories

pytestmark = pytest.mark.django_db(transaction=True)

QUESTIONS = pd.DataFrame(
    [
        {
            "id": f"q{i}",
            "question": f"Question {i}?",
            "type": "policy" if i % 2 else "howto",
            "gold": [{"doc": f"d{i}"}],
        }
        for i in range(40)
    ]
)


def rows(hit_every: int) -> pd.DataFrame:
    """Rows whose first retrieved document is the gold one for every ``hit_every``-th question."""
    first = [f"d{i}" if i % hit_every == 0 else "x" for i in range(40)]
    return pd.DataFrame(
        [{"id": f"q{i}", "retrieved": [first[i], "y"], "context_ids": [first[i]], "answer": "a"} for i in range(40)]
    )


@pytest.fixture
def lsl(live_server, owner):
    with Client(live_server.url, token=token_create(user=owner, name="tests").key, poll_interval=0.05) as client:
        yield client


def test_a_notebook_imports_an_eval_set_and_two_runs_from_dataframes_and_gates_them(lsl):
    created = lsl.import_evalset(QUESTIONS, name="support")
    assert created.created and "Created support v1 with 40 questions" in created.message
    assert not lsl.import_evalset(QUESTIONS, name="support").created  # the same content: nothing new
    lsl.import_run(rows(1), evalset="support", name="base", k=1)
    lsl.import_run(rows(2), evalset="support", name="cand", k=1)
    seen: list[tuple[int, int | None, str]] = []
    gate = lsl.gate(base="base", candidate="cand", metrics=["recall@1"], progress=lambda *p: seen.append(p))
    assert gate.overall == "block" and gate.exit_code == 4  # half the hits are gone
    decision = next(d for d in gate.decisions if d["metric"] == "recall@1" and d["slice"] == "all")
    assert decision["status"] == "block" and decision["mean"] == pytest.approx(-0.5)
    assert seen and seen[-1][0] >= 0  # the job's progress reached the callback


def test_a_bad_row_is_raised_with_the_servers_file_line_and_field(lsl):
    lsl.import_evalset(QUESTIONS, name="support")
    bad = rows(1)
    bad.loc[3, "retrieved"] = "not a list"
    with pytest.raises(ApiError) as refusal:
        lsl.import_run(bad, evalset="support", name="bad", k=1, filename="bad.jsonl")
    assert any(p.startswith("bad.jsonl, line 4, field 'retrieved'") for p in refusal.value.problems), refusal.value


def test_a_refused_request_says_which_input_was_wrong(lsl):
    with pytest.raises(ApiError) as refusal:
        lsl.import_run(rows(1), evalset="nowhere", name="r", k=1)
    assert refusal.value.status == 400
    assert any(p.startswith("evalset: ") and "nowhere" in p for p in refusal.value.problems), refusal.value.problems


def test_a_judge_report_and_a_disagreement_export_come_back_as_the_pages_give_them(lsl, owner, tmp_path):
    case = factories.make_spec_case(folder=tmp_path)
    factories.make_spec_campaign(case=case, name="faith", folder=tmp_path, user=owner)
    report = lsl.judge_report("faith")
    assert report["overall"]["agreement"] == 0.85 and round(report["overall"]["kappa"], 3) == 0.559  # the spec
    lines = lsl.export_disagreements("faith", format="chat").splitlines()
    assert len(lines) == 30  # 22 false passes and 8 false fails
    assert {m["role"] for m in json.loads(lines[0])["messages"]} == {"system", "user", "assistant"}
    assert ExportRecord.objects.filter(campaign__name="faith").count() == 1  # recorded, as every export is
