"""The gate's judge correction (``judge_correction="ppi"``): a judge metric decided on the prediction-powered
difference between two runs where people labelled both runs' rows, recorded with the decision, said at every
door; and the visible fall-back to the raw judge difference where they did not."""

from __future__ import annotations

import json

import pytest

from evalcore.models import Comparison
from evalcore.services.comparisons import compare_runs
from tests.factories import JUDGE, import_labels, make_campaign, make_eval_set, make_run, word

from .conftest import gate

pytestmark = pytest.mark.django_db

N = 120


def judge_passes(i: int) -> bool:
    return i % 5 != 0  # 96 of 120 answers pass, on both runs


def people_base(i: int) -> bool:
    return judge_passes(i)  # the judge is right on every baseline answer


def people_candidate(i: int) -> bool:
    return judge_passes(i) and i % 5 != 1  # ... and misses 24 unsupported candidate answers


@pytest.fixture
def labelled_runs(db, tmp_path):
    """Two runs the judge scores alike (raw difference 0) while people find the candidate 20 points worse."""
    questions = [
        {"id": f"c{i:03d}", "question": f"Question {i}?", "type": "a" if i % 2 else "b", "gold": [{"doc": f"d{i}"}]}
        for i in range(N)
    ]
    make_eval_set(folder=tmp_path, questions=questions, name="cor")

    def run(name: str):
        rows = [
            {
                "id": f"c{i:03d}",
                "retrieved": [f"d{i}"],
                "context_ids": [f"d{i}"],
                "claims": [{"text": f"Claim of {i}.", "supported": judge_passes(i)}],
            }
            for i in range(N)
        ]
        return make_run(folder=tmp_path, rows=rows, evalset="cor", name=name, k=1, judge_config=JUDGE)

    base, candidate = run("base"), run("candidate")

    def label(run, truth, size=10_000, name=None):
        campaign = make_campaign(run=run, name=name or f"faith-{run.name}", size=size)
        chosen = set(campaign.items.values_list("row__question__qid", flat=True))
        import_labels(
            folder=tmp_path,
            campaign=campaign,
            rows=[(f"c{i:03d}", None, word(truth(i)), "ann", "") for i in range(N) if f"c{i:03d}" in chosen],
            file=f"{campaign.name}.csv",
        )
        return campaign

    return {
        "base": base,
        "candidate": candidate,
        "label": label,
        "base_truth": people_base,
        "cand_truth": people_candidate,
    }


def faithfulness(comparison: Comparison, slice_name: str = "all"):
    return comparison.decisions.get(metric="faithfulness", slice=slice_name)


def test_with_every_row_labelled_the_corrected_difference_is_the_peoples_and_blocks_where_the_raw_one_passes(
    labelled_runs,
):
    labelled_runs["label"](labelled_runs["base"], people_base)
    labelled_runs["label"](labelled_runs["candidate"], people_candidate)
    kwargs = dict(base=labelled_runs["base"], candidate=labelled_runs["candidate"], slice_by=None, margin=0.05)
    raw = faithfulness(compare_runs(**kwargs).comparison)
    assert raw.mean == 0.0 and raw.status != "block"

    comparison = compare_runs(**kwargs, judge_correction="ppi").comparison
    faith = faithfulness(comparison)
    assert comparison.judge_correction == "ppi"
    assert faith.interval_method == "ppi" and faith.test_method == "normal"
    assert faith.mean == pytest.approx(-0.2)  # people's 72/120 - 96/120, exactly: every row labelled
    assert (faith.base_mean, faith.cand_mean) == (pytest.approx(0.8), pytest.approx(0.6))
    assert faith.status == "block" and faith.data_status == "block"
    record = faith.judge_correction
    assert record["method"] == "ppi" and record["labels"] == 2 * N
    assert record["base_labels"] == record["candidate_labels"] == N
    assert record["raw"]["mean"] == 0.0 and record["raw"]["status"] == raw.data_status == "pass"
    assert record["judge_raw"] == pytest.approx(0.0)
    assert record["campaigns"] == {"base": "faith-base", "candidate": "faith-candidate"}
    assert "decided on the judge-corrected difference, 240 labels" in faith.message
    assert "raw judge difference +0.000" in faith.message
    # only the questions' own sampling error is left: people's paired difference, var 0.16, over 120 questions
    assert faith.high - faith.mean == pytest.approx(1.96 * (0.2 * 0.8 * N / (N - 1) / N) ** 0.5, rel=0.03)
    # the corrected cell is one of the gate's family, corrected with the others
    assert faith.p_adjusted >= faith.p_value and comparison.family_size == comparison.decisions.count()


def test_a_sample_of_labels_corrects_towards_the_people_and_is_narrower_than_the_labels_alone(labelled_runs):
    labelled_runs["label"](labelled_runs["base"], people_base, size=60)
    labelled_runs["label"](labelled_runs["candidate"], people_candidate, size=60)
    comparison = compare_runs(
        base=labelled_runs["base"], candidate=labelled_runs["candidate"], slice_by=None, judge_correction="ppi"
    ).comparison
    faith = faithfulness(comparison)
    record = faith.judge_correction
    assert record["method"] == "ppi" and record["labels"] == 120
    assert faith.low < -0.2 < faith.high and faith.high < 0  # covers the people's difference, excludes the judge's 0
    only = record["labels_only"]
    assert only["high"] - only["low"] >= faith.high - faith.low  # the judge's verdicts (the strata) do not widen it
    assert record["worth"] >= 1.0


def test_too_few_labels_fall_back_to_the_raw_difference_and_say_so(labelled_runs):
    labelled_runs["label"](labelled_runs["base"], people_base)  # no campaign on the candidate's rows
    comparison = compare_runs(
        base=labelled_runs["base"], candidate=labelled_runs["candidate"], judge_correction="ppi", margin=0.05
    ).comparison
    for slice_name in ("all", "a", "b"):
        faith = faithfulness(comparison, slice_name)
        assert faith.judge_correction["method"] == "raw" and faith.interval_method != "ppi"
        assert "raw judge difference" in faith.message and "no labels on these runs" in faith.message
        assert "no labelling campaign on faithfulness over run 'candidate'" in faith.judge_correction["note"]
    recall = comparison.decisions.get(metric="recall@1", slice="all")
    assert recall.judge_correction is None  # deterministic metrics are not corrected


def test_the_gate_command_decides_on_the_corrected_difference_and_prints_it(labelled_runs):
    labelled_runs["label"](labelled_runs["base"], people_base)
    labelled_runs["label"](labelled_runs["candidate"], people_candidate)
    common = ("--base", "base", "--candidate", "candidate", "--metric", "faithfulness", "--margin", "0.05")
    code, out, _ = gate(*common, "--slice-by", "none", "--judge-correction", "ppi")
    assert code == 4, out
    assert "judge correction: ppi" in out and "decided on the judge-corrected difference" in out
    code, out, _ = gate(*common, "--judge-correction", "ppi", "--json")
    data = json.loads(out)
    assert data["judge_correction"] == "ppi"
    by_slice = {d["slice"]: d for d in data["decisions"]}
    assert by_slice["all"]["judge_correction"]["method"] == "ppi"
    assert by_slice["all"]["interval_method"] == "ppi"
    assert set(by_slice) == {"all", "a", "b"}
    assert all(d["judge_correction"]["method"] == "ppi" for d in data["decisions"])  # 60 labels a slice per run
    code, out, _ = gate(*common, "--slice-by", "none")
    assert code != 4 and "judge correction" not in out  # none by default: the raw judge difference


def test_an_unknown_judge_correction_is_refused(labelled_runs):
    code, _, err = gate("--base", "base", "--candidate", "candidate", "--judge-correction", "rg")
    assert code == 1 and "invalid choice: 'rg'" in err


def test_the_api_takes_the_judge_correction_and_the_comparison_says_which_difference_decided(
    owner_client, labelled_runs
):
    labelled_runs["label"](labelled_runs["base"], people_base, size=60)
    labelled_runs["label"](labelled_runs["candidate"], people_candidate, size=60)
    body = {"base": "base", "candidate": "candidate", "metrics": ["faithfulness"], "slice_by": "none"}
    refused = owner_client.post("/api/gate/", {**body, "judge_correction": "rg"}, content_type="application/json")
    assert refused.status_code == 400 and "judge_correction" in refused.json()
    accepted = owner_client.post("/api/gate/", {**body, "judge_correction": "ppi"}, content_type="application/json")
    assert accepted.status_code == 202
    job = owner_client.get(accepted.json()["url"]).json()
    detail = owner_client.get(f"/api/comparisons/{job['result']['comparison_id']}/").json()
    assert detail["judge_correction"] == "ppi"
    (faith,) = detail["decisions"]
    assert faith["interval_method"] == "ppi" and faith["judge_correction"]["labels"] == 120
    assert faith["judge_correction"]["sentence"].startswith("decided on the judge-corrected difference, 120 labels")
    page = owner_client.get(f"/comparisons/{detail['id']}/").content.decode()
    assert "Judge correction: ppi" in page and "decided on the judge-corrected difference, 120 labels" in page
