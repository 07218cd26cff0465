"""Every door of the bias battery (page, htmx estimate, API, ``judge_bias`` command) goes through the one service,
needs an eval owner, and shows the same stored findings."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evalcore.judging.probes import AUTHORITY
from evalcore.models import Job
from evalcore.services.judge_configs import judge_config_create
from labelstudio_lite.labelling.models import BiasBattery, BiasProbe
from tests import factories

PROMPT = "Is the claim supported by the context?\nQuestion: {question}\nAnswer: {answer}\nContext:\n{context}\nClaim: {claim}"


@pytest.fixture
def seeing_judge(db, fake_judge):
    return judge_config_create(
        raw=factories.runnable_judge(fake_judge.base_url, name="seeing-judge", prompt=PROMPT)
    ).config


@pytest.fixture
def small_probe_set(db, tmp_path):
    run = factories.make_literal_run(folder=tmp_path, n=24, evalset="small-probes", name="small")
    return factories.make_campaign(run=run, name="small-probes", unit="answer", heldout_fraction=0.25)


def test_the_page_shows_the_probes_their_text_and_the_estimate_then_starts_a_job(
    seeing_judge, small_probe_set, fake_judge, owner_client
):
    url = f"/campaigns/{small_probe_set.name}/bias/"
    page = owner_client.get(url).content.decode()
    assert "authority@v1" in page and "As an expert in this field" in page and "No battery has run" in page
    partial = owner_client.get(f"{url}?judge_config={seeing_judge.pk}", headers={"HX-Request": "true"})
    body = partial.content.decode()
    assert partial.status_code == 200 and body.lstrip().startswith('<div id="estimate">')
    assert "calls (0 already in the cache, free)" in body and not fake_judge.fake.requests

    started = owner_client.post(
        url, {"judge_config": seeing_judge.pk, "bar": 0.05, "alpha": 0.05, "correction": "holm"}
    )

    assert started.status_code == 302 and started["Location"].startswith("/jobs/")
    job = Job.objects.get(pk=int(started["Location"].split("/")[2]))
    assert job.kind == "judge_bias" and job.status == "succeeded" and job.total
    shown = owner_client.get(url).content.decode()
    assert f"Battery #{job.result['battery']}" in shown and "CLEAR" in shown
    report = owner_client.get(f"/campaigns/{small_probe_set.name}/report/").content.decode()
    assert 'id="bias-line"' in report and f"Bias battery #{job.result['battery']}" in report


def test_annotators_never_reach_the_battery(seeing_judge, small_probe_set, annotator_client):
    name = small_probe_set.name
    for url in (
        f"/campaigns/{name}/bias/",
        f"/api/campaigns/{name}/bias/",
        f"/api/judge-configs/{seeing_judge.pk}/bias/",
    ):
        assert annotator_client.get(url).status_code in (403, 404), url
    assert annotator_client.post("/api/bias-probes/", {}).status_code in (403, 404)
    assert not BiasBattery.objects.exists()


def test_the_api_estimates_starts_and_reads_the_battery_and_the_verdict(
    seeing_judge, small_probe_set, fake_judge, owner_client
):
    fake_judge.fake.bias(AUTHORITY, 1.0)
    name = small_probe_set.name
    estimate = owner_client.get(f"/api/campaigns/{name}/bias/estimate/?judge_config={seeing_judge.pk}&probes=authority")
    assert estimate.status_code == 200 and estimate.json()["probes"] == ["authority@v1", "placebo@v1"]
    refused = owner_client.post(
        f"/api/campaigns/{name}/bias/",
        {"judge_config": seeing_judge.pk, "probes": ["nosuch"]},
        content_type="application/json",
    )
    assert refused.status_code == 400 and "there is no bias probe 'nosuch'" in refused.json()["probes"][0]

    started = owner_client.post(
        f"/api/campaigns/{name}/bias/",
        {"judge_config": seeing_judge.pk, "probes": ["authority"]},
        content_type="application/json",
    )

    assert started.status_code == 202
    listed = owner_client.get(f"/api/campaigns/{name}/bias/").json()["batteries"]
    assert len(listed) == 1 and listed[0]["blocks_gating"] and listed[0]["findings"][0]["probe"] == "authority"
    answer = owner_client.get(f"/api/judge-configs/{seeing_judge.pk}/bias/").json()
    verdict = answer["verdict"]
    assert verdict["blocks_gating"] and verdict["words"].startswith("untrusted for gating: flips 100 %")
    assert answer["gating"]["state"] == "untrusted" and answer["gating"]["certificate"] is None


def test_owners_add_a_probe_through_the_api_the_page_and_the_command(owner_client, small_probe_set):
    api = owner_client.post(
        "/api/bias-probes/",
        {"name": "thanks", "kind": "append", "field": "answer", "text": "Thank you!", "describes": "when it thanks"},
        content_type="application/json",
    )
    assert api.status_code == 201 and api.json()["version"] == 1
    page = owner_client.post(
        f"/campaigns/{small_probe_set.name}/bias/probes/",
        {"name": "thanks", "kind": "append", "field": "answer", "text": "Thanks a lot!", "describes": "when it thanks"},
    )
    assert page.status_code == 302
    out = io.StringIO()
    call_command(
        "judge_bias",
        "--add-probe",
        "thanks",
        "--kind",
        "prepend",
        "--field",
        "answer",
        "--text",
        "Hi.",
        "--describes",
        "when it greets",
        stdout=out,
    )
    assert list(BiasProbe.objects.filter(name="thanks").values_list("version", flat=True)) == [3, 2, 1]
    builtin = owner_client.post(
        "/api/bias-probes/",
        {"name": "authority", "kind": "append", "field": "answer", "text": "x", "describes": "y"},
        content_type="application/json",
    )
    assert builtin.status_code == 400 and "built-in probe" in builtin.json()["name"][0]


def test_the_command_prints_the_estimate_then_the_findings_and_exits_4_when_a_probe_blocks(
    seeing_judge, small_probe_set, fake_judge
):
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "judge_bias", small_probe_set.name, "--judge-config", "seeing-judge", "--estimate", stdout=out, stderr=err
    )
    assert "estimate: " in err.getvalue() and "probes: verbosity@v1, authority@v1" in err.getvalue()
    assert not fake_judge.fake.requests
    call_command("judge_bias", "--list-probes", stdout=out)
    assert "authority@v1: adds after the answer: 'As an expert" in out.getvalue()

    fake_judge.fake.bias(AUTHORITY, 1.0)
    with pytest.raises(SystemExit) as exited:
        call_command("judge_bias", small_probe_set.name, "--judge-config", "seeing-judge", stdout=out, stderr=err)
    assert exited.value.code == 4
    assert "[BLOCKS] authority to_supported: flips 100 %" in out.getvalue()
    with pytest.raises(CommandError, match="no bias probe"):
        call_command("judge_bias", small_probe_set.name, "--judge-config", "seeing-judge", "--probe", "nosuch")


def test_a_blocking_battery_makes_a_trusted_certificate_untrusted_for_gating(seeing_judge, small_probe_set, fake_judge):
    from labelstudio_lite.labelling.bias_selectors import certificate_for_gating
    from labelstudio_lite.labelling.models import Certificate
    from labelstudio_lite.labelling.services.bias_battery import bias_battery_run, bias_plan

    assert certificate_for_gating(seeing_judge) is None
    certificate = Certificate.objects.create(
        judge_config=seeing_judge,
        config_hash=seeing_judge.config_hash,
        model=seeing_judge.model,
        prompt_hash=seeing_judge.prompt_hash,
        metric="faithfulness",
        guideline_version=1,
        definition={},
        definition_hash="d" * 64,
        campaign=small_probe_set.name,
        source="judge report",
        state="trusted",
        items=200,
        failure_items=50,
        reasons=[],
        fingerprint="f" * 64,
    )
    assert certificate_for_gating(seeing_judge).trusted

    bias_battery_run(bias_plan(campaign=small_probe_set, config=seeing_judge, probes=["verbosity"]))
    cleared = certificate_for_gating(seeing_judge)
    assert cleared.trusted and not cleared.bias.blocks_gating

    fake_judge.fake.bias(AUTHORITY, 1.0)
    bias_battery_run(bias_plan(campaign=small_probe_set, config=seeing_judge, probes=["authority"]))
    gating = certificate_for_gating(seeing_judge)
    assert gating.state == "untrusted" and gating.certificate == certificate
    assert gating.reasons[0].startswith("bias: flips 100 % of unsupported claims to supported when the answer ends")
    assert Certificate.objects.get(pk=certificate.pk).state == "trusted"  # the certificate itself never changes
