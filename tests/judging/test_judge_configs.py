"""Judge configs: what is pinned in the hash and what is not, templates checked up front, API keys never kept,
and every door that creates or shows one (command, API, page), with the campaigns that validated it."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evalcore.demo import JUDGE_CONFIG
from evalcore.models import JudgeConfig
from evalcore.services.judge_configs import judge_config_create, normalize_judge_config
from evalcore.services.judge_runs import judge_run
from evalcore.services.problems import ImportFailed, UserFacingError
from tests.factories import JUDGE, label_items, make_campaign, runnable_judge

BASE = "http://127.0.0.1:9/v1"


def test_configs_imported_before_judges_could_run_keep_their_hashes():
    # computed with the code before this change: re-importing the same JSON finds the same config
    assert (
        normalize_judge_config(JUDGE)["config_hash"]
        == "621ccf441d92aafcb2cd5ae9f944406ff46760a705c9fefa0f1234d6135e985b"
    )
    assert (
        normalize_judge_config(JUDGE_CONFIG)["config_hash"]
        == "042a8cd009cfd66b41c705690c1b2d4f7bf8dd90c172945daed40ae801c391dc"
    )
    legacy = {**JUDGE, "name": "x", "base_url": "http://a"}  # any other key of an imported config stays hashed
    assert (
        normalize_judge_config(legacy)["config_hash"]
        == "0c0d0e9ef07106aa895237c13ad393c05f476a3dc50c4d0d4470fd5c3b776f42"
    )


@pytest.mark.parametrize(
    "change",
    [
        {"base_url": "http://10.0.0.1:8000/v1"},
        {"api_key_env": "OTHER_KEY"},
        {"limits": {"concurrency": 64, "requests_per_minute": 3000}},
        {"price": {"input_per_1k": 9.0, "output_per_1k": 9.0}},
        {"name": "another-name"},
    ],
)
def test_where_and_how_hard_a_judge_is_called_is_outside_the_hash(change):
    assert (
        normalize_judge_config({**runnable_judge(BASE), **change})["config_hash"]
        == normalize_judge_config(runnable_judge(BASE))["config_hash"]
    )


@pytest.mark.parametrize(
    "change",
    [
        {"endpoint_kind": "ollama"},
        {"model": "other-model"},
        {"prompt": "Context:\n{context}\nClaim: {claim}\nBe strict."},
        {"claim_prompt": "Claims of: {answer}"},
        {"system_prompt": "You are terse."},
        {"temperature": 0.7},
        {"seed": 8},
        {"max_tokens": 64},
        {"structured_output": "json_object"},
        {
            "verdict_schema": {
                "type": "object",
                "properties": {"supported": {"type": "boolean"}},
                "required": ["supported"],
            }
        },
        {"few_shot_examples": [{"question": "q", "context": ["c"], "claim": "c", "supported": True}]},
    ],
)
def test_everything_that_changes_a_verdict_is_in_the_hash(change):
    assert (
        normalize_judge_config({**runnable_judge(BASE), **change})["config_hash"]
        != normalize_judge_config(runnable_judge(BASE))["config_hash"]
    )


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"api_key": "sk-live-123"}, "api_key", "api_key_env"),
        ({"api_key_env": "sk-live-123"}, "api_key_env", "NAME of an environment variable"),
        ({"prompt": "Context: {context} Claim: {claim} {verdict}"}, "prompt", "uses {verdict}"),
        ({"prompt": "Context: {context}"}, "prompt", "must contain {claim}"),
        ({"prompt": "{context.__class__} {claim}"}, "prompt", "plain names"),
        ({"claim_prompt": "Split {question}"}, "claim_prompt", "must contain {answer}"),
        ({"endpoint_kind": "bard"}, "endpoint_kind", "must be one of"),
        ({"limits": {"concurrency": 0}}, "limits.concurrency", "from 1"),
        ({"price": {"input_per_1k": -1}}, "price.input_per_1k", "0 or more"),
        ({"verdict_schema": {"type": "object"}}, "verdict_schema", "requires 'supported'"),
        ({"base_url": "ftp://x"}, "base_url", "http://"),
    ],
)
def test_a_config_that_cannot_run_is_refused_naming_the_field(change, field, says):
    with pytest.raises(ImportFailed) as refused:
        normalize_judge_config({**runnable_judge(BASE), **change}, "judge.json")
    problem = next(p for p in refused.value.problems if p.field == field)
    assert says in problem.message


def test_the_api_key_is_read_from_the_environment_and_never_stored_shown_or_exported(
    db, fake_judge, literal_run, monkeypatch, owner_client, tmp_path
):
    secret = "sk-test-SECRETVALUE-0042"
    monkeypatch.setenv("LSL_TEST_JUDGE_KEY", secret)
    config = judge_config_create(raw=runnable_judge(fake_judge.base_url, api_key_env="LSL_TEST_JUDGE_KEY")).config
    seen: list[str] = []
    fake_judge.fake.on_headers = seen.append
    result = judge_run(run=literal_run, config=config)

    assert seen and all(h == f"Bearer {secret}" for h in seen)  # the judge got it ...
    stored = json.dumps(list(JudgeConfig.objects.values()), default=str) + json.dumps(result.run.metadata)
    api = owner_client.get(f"/api/judge-configs/{config.pk}/").content.decode()
    page = owner_client.get(f"/judges/{config.pk}/").content.decode()
    out = io.StringIO()
    call_command("judge_config", "show", config.name, "--json", stdout=out)
    for text in (stored, api, page, out.getvalue()):
        assert secret not in text  # ... and nothing else did
    assert "LSL_TEST_JUDGE_KEY" in page and "LSL_TEST_JUDGE_KEY" in api


def test_the_endpoint_is_sent_everything_the_config_pins(db, fake_judge, literal_run):
    config = judge_config_create(raw=runnable_judge(fake_judge.base_url, structured_output="json_schema")).config
    bodies: list[dict] = []
    fake_judge.fake.on_body = bodies.append
    judge_run(run=literal_run, config=config)

    verdicts = [b for b in bodies if b["response_format"]["json_schema"]["name"] == "verdict"]
    assert verdicts and len(verdicts) == len(bodies)  # claims kept: every call asks for a verdict
    for body in verdicts:
        assert body["model"] == "fake-judge"
        assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.0, 7, 200)
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["strict"] is True
        assert body["response_format"]["json_schema"]["schema"] == config.verdict_schema
        assert "supported" in config.verdict_schema["required"]
        assert body["messages"][-1]["role"] == "user" and "Claim:" in body["messages"][-1]["content"]
        assert "stream" not in body or body["stream"] is False


def test_a_missing_key_fails_the_job_with_what_to_set(db, fake_judge, literal_run):
    config = judge_config_create(raw=runnable_judge(fake_judge.base_url, api_key_env="LSL_NOT_SET_ANYWHERE")).config
    with pytest.raises(UserFacingError, match="LSL_NOT_SET_ANYWHERE, which is not set"):
        judge_run(run=literal_run, config=config)
    assert not fake_judge.fake.requests


def test_judge_config_create_names_updates_the_endpoint_and_refuses_a_changed_judge(db, tmp_path):
    path = tmp_path / "judge.json"

    def create(**changes) -> str:
        path.write_text(json.dumps({**runnable_judge(BASE), **changes}))
        out = io.StringIO()
        call_command("judge_config", "create", str(path), stdout=out)
        return out.getvalue()

    assert "Created judge config 'literal-judge'" in create()
    assert "nothing changed" in create()
    assert "updated base_url" in create(base_url="http://127.0.0.1:8000/v1")
    assert JudgeConfig.objects.get().base_url == "http://127.0.0.1:8000/v1"
    with pytest.raises(CommandError, match="a changed judge is a new config"):
        create(prompt="Context:\n{context}\nClaim: {claim}\nStrict.")
    with pytest.raises(CommandError, match="already pinned as 'literal-judge'"):
        create(name="same-content-other-name")
    assert JudgeConfig.objects.count() == 1


def test_a_config_imported_with_a_run_is_named_when_created_with_the_same_content(db):
    content = {k: v for k, v in runnable_judge(BASE).items() if k != "name"}
    imported = JudgeConfig.objects.create(**normalize_judge_config(content))

    result = judge_config_create(raw=content, name="adopted")

    assert result.config.pk == imported.pk and not result.created and result.config.name == "adopted"


def test_the_config_page_api_and_command_show_which_campaigns_validated_it_and_how_it_did(
    db, judge, literal_run, owner_client, annotator
):
    scored = judge_run(run=literal_run, config=judge).run
    campaign = make_campaign(run=scored, name="lit-claims", unit="claim", annotators=[annotator])
    label_items(
        campaign=campaign, user=annotator, value=lambda item: "supported" if item.claim_index == 0 else "unsupported"
    )

    page = owner_client.get(f"/judges/{judge.pk}/").content.decode()
    api = owner_client.get(f"/api/judge-configs/{judge.pk}/").json()
    out = io.StringIO()
    call_command("judge_config", "show", judge.name, stdout=out)

    assert "lit-claims" in page and "too few labels" in page and "16 (8 unsupported)" in page
    assert api["measurements"][0]["campaign"] == "lit-claims" and api["measurements"][0]["n"] == 16
    assert api["validation"]["status"] == "unvalidated" and api["runs"][0]["name"] == scored.name
    assert "measured by campaign lit-claims" in out.getvalue()


def test_configs_are_created_from_the_page_and_the_api(db, owner_client):
    page = owner_client.post("/judges/", {"config": json.dumps(runnable_judge(BASE, name="from-page"))})
    api = owner_client.post(
        "/api/judge-configs/", runnable_judge(BASE, name="from-api", seed=9), content_type="application/json"
    )
    bad = owner_client.post(
        "/api/judge-configs/", runnable_judge(BASE, name="bad", prompt="{nothing}"), content_type="application/json"
    )

    assert page.status_code == 302 and JudgeConfig.objects.filter(name="from-page").exists()
    assert api.status_code == 201 and api.json()["name"] == "from-api"
    assert bad.status_code == 400 and bad.json()["problems"][0]["field"] == "prompt"
    listed = owner_client.get("/api/judge-configs/").json()["results"]
    assert {c["name"] for c in listed} == {"from-page", "from-api"}


def test_an_unnamed_config_is_shown_by_the_label_the_list_gives_it(db):
    config = JudgeConfig.objects.create(**normalize_judge_config(JUDGE_CONFIG))  # imported with a run: no name
    listed = io.StringIO()
    call_command("judge_config", "list", stdout=listed)
    label = listed.getvalue().split()[0]
    assert not config.name and label == f"judge-{config.config_hash[:8]}"

    for ref in (label, config.config_hash[:12], f"#{config.pk}"):
        out = io.StringIO()
        call_command("judge_config", "show", ref, stdout=out)
        assert out.getvalue().startswith(f"judge config {label} · hash {config.config_hash}")
    with pytest.raises(CommandError, match="there is no judge config 'judge-0000'"):
        call_command("judge_config", "show", "judge-0000")  # too short a prefix to name one
