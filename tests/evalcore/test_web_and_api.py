"""Pages and API: eval owners only, token authentication, uploads that run as jobs, and what the
comparison, run, rows and job pages show."""

from __future__ import annotations

import json
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evalcore.jobs.kinds import IMPORT_RUN
from evalcore.jobs.runner import progress_reporter
from evalcore.models import Comparison, EvalSetVersion, Job, Row, Run
from evalcore.services.comparisons import compare_runs
from labelstudio_lite.accounts.tokens import token_create
from tests.factories import JUDGE, QUESTIONS, make_eval_set, make_run, ok_row, ok_rows

from .conftest import db_counts

pytestmark = pytest.mark.django_db


def jsonl_bytes(records) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records).encode()


def upload(name: str, records) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, jsonl_bytes(records), content_type="application/x-ndjson")


EXTRA = [
    {
        "id": f"x{i:02d}",
        "question": f"Extra question {i}?",
        "type": "policy" if i % 2 else "billing",
        "gold": [{"doc": f"e{i}"}],
    }
    for i in range(20)
]
ALL_IDS = [q["id"] for q in QUESTIONS + EXTRA]


@pytest.fixture
def big_version(db, tmp_path):
    """Eval set 'support' v1 with 25 questions: enough pairs (10 or more) for the gate to decide."""
    return make_eval_set(folder=tmp_path, questions=QUESTIONS + EXTRA, name="support")


@pytest.fixture
def world(big_version, tmp_path, owner):
    """A full baseline, a partial candidate (15 of 25) with worse faithfulness, a comparison and a job."""
    base_rows = [ok_row(qid) for qid in ALL_IDS]
    base = make_run(folder=tmp_path, rows=base_rows, evalset="support", name="base", k=3, judge_config=JUDGE)
    cand_rows = [ok_row(qid, claims=[{"text": "A.", "supported": False}]) for qid in ALL_IDS[:15]]
    cand = make_run(folder=tmp_path, rows=cand_rows, evalset="support", name="cand", k=3, judge_config=JUDGE)
    comparison = compare_runs(base=base, candidate=cand, user=owner, judge_policy="off").comparison
    job = Job.objects.create(kind=IMPORT_RUN, params={}, created_by=owner)
    row = Row.objects.filter(run=base).first()
    return {"version": big_version, "base": base, "cand": cand, "comparison": comparison, "job": job, "row": row}


def pages(w) -> list[str]:
    return [
        reverse("evalcore:evalsets"),
        reverse("evalcore:version", args=["support", 1]),
        reverse("evalcore:runs"),
        reverse("evalcore:run", args=[w["base"].pk]),
        reverse("evalcore:rows", args=[w["base"].pk]),
        reverse("evalcore:row", args=[w["base"].pk, w["row"].pk]),
        reverse("evalcore:compare"),
        reverse("evalcore:comparison", args=[w["comparison"].pk]),
        reverse("evalcore:changed-rows", args=[w["comparison"].pk]),
        reverse("evalcore:job", args=[w["job"].pk]),
        reverse("evalcore:jobs"),
    ]


def api_endpoints(w) -> list[tuple[str, str]]:
    """(method, url) for every evalcore endpoint, with the method an owner uses."""
    return [
        ("get", f"/api/jobs/{w['job'].pk}/"),
        ("get", "/api/evalsets/"),
        ("post", "/api/evalsets/import/"),
        ("get", "/api/evalsets/support/versions/1/questions/"),
        ("get", "/api/runs/"),
        ("post", "/api/runs/import/"),
        ("get", f"/api/runs/{w['base'].pk}/"),
        ("get", f"/api/runs/{w['base'].pk}/rows/"),
        ("post", "/api/gate/"),
        ("get", f"/api/comparisons/{w['comparison'].pk}/"),
        ("get", f"/api/comparisons/{w['comparison'].pk}/changed/?metric=faithfulness"),
    ]


# ---------------------------------------------------------------------------------------------
# Who sees what
# ---------------------------------------------------------------------------------------------


def test_anonymous_visitors_are_sent_to_login_from_every_page(client, world):
    for url in pages(world):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url


def test_annotators_are_refused_every_page(annotator_client, world):
    for url in pages(world):
        assert annotator_client.get(url).status_code == 403, url


def test_eval_owners_see_every_page(owner_client, world):
    for url in pages(world):
        assert owner_client.get(url).status_code == 200, url


def test_anonymous_requests_to_every_endpoint_are_refused(client, world):
    before = db_counts()
    for method, url in api_endpoints(world):
        response = getattr(client, method)(url)
        assert response.status_code in (401, 403), (method, url, response.status_code)
    assert db_counts() == before


def test_annotators_are_refused_every_endpoint(annotator_client, world):
    before = db_counts()
    for method, url in api_endpoints(world):
        response = getattr(annotator_client, method)(url)
        assert response.status_code == 403, (method, url, response.status_code)
    assert db_counts() == before


def test_eval_owners_reach_every_endpoint(owner_client, world):
    for method, url in api_endpoints(world):
        extra = {"content_type": "application/json"} if url == "/api/gate/" else {}
        response = getattr(owner_client, method)(url, **extra)
        # reading endpoints answer 200; posting nothing is refused as a bad request, not as forbidden
        assert response.status_code == (200 if method == "get" else 400), (method, url, response.status_code)


def test_token_authentication_works_for_scripts(client, owner, annotator, world):
    token = token_create(user=owner, name="tests")
    response = client.get("/api/runs/", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 200
    assert {r["name"] for r in response.json()["results"]} == {"base", "cand"}
    annotator_token = token_create(user=annotator, name="tests")
    assert client.get("/api/runs/", HTTP_AUTHORIZATION=f"Token {annotator_token.key}").status_code == 403
    assert client.get("/api/runs/", HTTP_AUTHORIZATION="Token not-a-real-token").status_code == 401


def test_a_superuser_is_an_eval_owner_and_an_inactive_owner_is_not(client, django_user_model, world):
    boss = django_user_model.objects.create_superuser("boss", "b@example.com", "boss-pass-123", role="annotator")
    client.force_login(boss)
    assert client.get(reverse("evalcore:runs")).status_code == 200
    gone = django_user_model.objects.create_user("gone", password="gone-pass-123", role="eval_owner")
    token = token_create(user=gone, name="tests")
    gone.is_active = False
    gone.save()
    assert client.get("/api/runs/", HTTP_AUTHORIZATION=f"Token {token.key}").status_code in (401, 403)


# ---------------------------------------------------------------------------------------------
# Uploads through the pages: a job that ends with a result link, or with line-numbered problems
# ---------------------------------------------------------------------------------------------


def test_uploading_questions_on_the_page_runs_a_job_that_links_to_the_new_version(owner_client, owner):
    response = owner_client.post(
        reverse("evalcore:evalsets"), {"file": upload("questions.jsonl", QUESTIONS), "name": "support"}
    )
    assert response.status_code == 302
    job = Job.objects.get()
    assert response["Location"] == reverse("evalcore:job", args=[job.pk])
    assert (job.kind, job.status, job.created_by) == ("import_evalset", "succeeded", owner)
    assert job.finished_at is not None
    version = EvalSetVersion.objects.get(eval_set__name="support")
    assert version.sealed and version.question_count == 5 and version.created_by == owner
    page = owner_client.get(response["Location"]).content.decode()
    assert "Done. Created support v1 with 5 questions." in page
    assert f'href="{reverse("evalcore:version", args=["support", 1])}"' in page
    assert "Open the result" in page


def test_uploading_a_run_on_the_page_runs_a_job_that_links_to_the_run(owner_client, version):
    response = owner_client.post(
        reverse("evalcore:runs"),
        {
            "file": upload("rows.jsonl", ok_rows()),
            "evalset": "support@1",
            "name": "from-page",
            "k": 3,
            "gain": "exponential",
            "judge_config": json.dumps(JUDGE),
            "system_config": json.dumps({"retriever": "bm25"}),
        },
    )
    assert response.status_code == 302
    job = Job.objects.get()
    assert job.status == "succeeded", job.error
    run = Run.objects.get(name="from-page")
    assert job.result["run_id"] == run.pk
    assert run.row_count == 5 and run.judge_config.model == "gpt-x" and run.system_config == {"retriever": "bm25"}
    page = owner_client.get(response["Location"]).content.decode()
    assert f'href="{reverse("evalcore:run", args=[run.pk])}"' in page


def test_an_htmx_upload_answers_with_a_client_redirect_to_the_job(owner_client):
    response = owner_client.post(
        reverse("evalcore:evalsets"),
        {"file": upload("questions.jsonl", QUESTIONS), "name": "support"},
        HTTP_HX_REQUEST="true",
    )
    job = Job.objects.get()
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("evalcore:job", args=[job.pk])


def test_a_bad_upload_ends_failed_with_line_numbered_problems_on_the_job_page(owner_client):
    bad = [QUESTIONS[0], {**QUESTIONS[1], "id": "q1"}, {**QUESTIONS[2], "gold": [{"doc": "d4", "grade": "high"}]}]
    before = db_counts()
    response = owner_client.post(
        reverse("evalcore:evalsets"), {"file": upload("my questions.jsonl", bad), "name": "support"}
    )
    job = Job.objects.get()
    assert job.status == "failed"
    assert [(p["line"], p["field"]) for p in job.result["problems"]] == [(2, "id"), (3, "gold[0].grade")]
    assert db_counts() == before
    page = owner_client.get(response["Location"]).content.decode()
    assert "Failed: nothing was written." in page
    assert "my questions.jsonl, line 2, field “id”: question id &#x27;q1&#x27; is used twice" in page
    assert "my questions.jsonl, line 3, field “gold[0].grade”: must be a number" in page
    assert "Open the result" not in page


def test_a_bad_run_upload_ends_failed_and_writes_nothing(owner_client, version):
    before = db_counts()
    response = owner_client.post(
        reverse("evalcore:runs"),
        {
            "file": upload("rows.jsonl", [ok_row("q1"), '{"id": "q2",']),
            "evalset": "support",
            "name": "bad",
            "gain": "exponential",
        },
    )
    assert Job.objects.get().status == "failed"
    assert db_counts() == before
    page = owner_client.get(response["Location"]).content.decode()
    assert "rows.jsonl, line 2: malformed JSON" in page


def test_an_upload_form_with_a_bad_field_is_shown_again_with_the_error(owner_client):
    response = owner_client.post(
        reverse("evalcore:runs"),
        {
            "file": upload("rows.jsonl", ok_rows()),
            "evalset": "support",
            "name": "x",
            "gain": "exponential",
            "judge_config": "{oops",
        },
    )
    assert response.status_code == 400
    assert "the judge config holds malformed JSON" in response.content.decode()
    assert Job.objects.count() == 0


def test_an_upload_over_the_size_limit_is_refused_on_the_form(owner_client, settings):
    settings.UPLOAD_MAX_BYTES = 10
    response = owner_client.post(
        reverse("evalcore:evalsets"), {"file": upload("questions.jsonl", QUESTIONS), "name": "support"}
    )
    assert response.status_code == 400
    assert "the limit is 10" in response.content.decode()
    assert Job.objects.count() == 0


# ---------------------------------------------------------------------------------------------
# Uploads and the gate through the API
# ---------------------------------------------------------------------------------------------


def test_an_api_upload_creates_a_job_that_succeeds_with_a_result(owner_client):
    response = owner_client.post(
        "/api/evalsets/import/", {"file": upload("questions.jsonl", QUESTIONS), "name": "support"}
    )
    assert response.status_code == 202
    job_id = response.json()["id"]
    assert response["Location"] == f"/api/jobs/{job_id}/"
    job = owner_client.get(f"/api/jobs/{job_id}/").json()
    assert job["status"] == "succeeded" and job["kind"] == "import_evalset"
    assert job["result"]["version"] == 1 and job["result"]["eval_set"] == "support"
    questions = owner_client.get("/api/evalsets/support/versions/1/questions/").json()
    assert questions["count"] == 5
    assert {q["id"] for q in questions["results"]} == {"q1", "q2", "q3", "q4", "q5"}


def test_an_api_run_upload_and_gate_with_a_token_end_in_a_logged_comparison(client, owner, big_version):
    token = token_create(user=owner, name="tests")
    auth = {"HTTP_AUTHORIZATION": f"Token {token.key}"}
    for name, rows in (
        ("base", [ok_row(qid) for qid in ALL_IDS]),
        ("cand", [ok_row(qid, claims=[]) for qid in ALL_IDS]),
    ):
        response = client.post(
            "/api/runs/import/",
            {
                "file": upload(f"{name}.jsonl", rows),
                "evalset": "support",
                "name": name,
                "k": 3,
                "judge_config": json.dumps(JUDGE),
            },
            **auth,
        )
        assert response.status_code == 202, response.content
        assert client.get(response["Location"], **auth).json()["status"] == "succeeded"
    run = client.get("/api/runs/?evalset=support@1", **auth).json()["results"][0]
    assert run["coverage"] == 1.0 and run["judge_config"]["model"] == "gpt-x"
    response = client.post(
        "/api/gate/",
        {"base": "base", "candidate": "cand", "metrics": ["recall@3"], "margin": 0.05},
        content_type="application/json",
        **auth,
    )
    assert response.status_code == 202, response.content
    job = client.get(response["Location"], **auth).json()
    assert job["status"] == "succeeded"
    comparison = client.get(f"/api/comparisons/{job['result']['comparison_id']}/", **auth).json()
    assert comparison["overall"] == "pass"  # the candidate retrieved exactly what the baseline did
    assert comparison["decisions"][0]["metric"] == "recall@3" and comparison["decisions"][0]["margin"] == 0.05
    assert Comparison.objects.get().created_by == owner


def test_an_api_gate_across_versions_is_refused_with_a_message(owner_client, world, tmp_path):
    make_eval_set(folder=tmp_path / "v2", questions=QUESTIONS[:2], name="support")
    make_run(folder=tmp_path / "v2", rows=[ok_row("q1")], evalset="support@2", name="newer", k=3)
    response = owner_client.post(
        "/api/gate/", {"base": f"#{world['base'].pk}", "candidate": "newer"}, content_type="application/json"
    )
    assert response.status_code == 400
    assert "paired on one frozen eval set version" in response.json()["detail"]


def test_a_bad_api_upload_ends_failed_with_its_problems(owner_client, version):
    before = db_counts()
    response = owner_client.post(
        "/api/runs/import/",
        {
            "file": upload("rows.jsonl", [ok_row("q1"), ok_row("q42")]),
            "evalset": "support",
            "name": "bad",
            "k": 3,
        },
    )
    job = owner_client.get(response["Location"]).json()
    assert job["status"] == "failed"
    assert job["result"]["problems"] == [
        {
            "file": "rows.jsonl",
            "line": 2,
            "field": "id",
            "message": "question 'q42' is not in support v1; rows must answer the version's questions",
        },
    ]
    assert "rows.jsonl, line 2, field 'id'" in job["error"]
    assert db_counts() == before


def test_the_rows_endpoint_filters_by_slice_and_metric_range(owner_client, run):
    url = f"/api/runs/{run.pk}/rows/"
    billing = owner_client.get(url, {"type": "billing"}).json()
    assert sorted(r["id"] for r in billing["results"]) == ["q2", "q4", "q5"]
    high = owner_client.get(url, {"metric": "recall@3", "min": "0.5"}).json()
    assert sorted(r["id"] for r in high["results"]) == ["q1", "q2"]
    low = owner_client.get(url, {"metric": "recall@3", "max": "0.2"}).json()
    assert sorted(r["id"] for r in low["results"]) == ["q3", "q5"]  # q4 is unanswerable: no recall, not 0
    defined = owner_client.get(url, {"metric": "abstention"}).json()
    assert [r["id"] for r in defined["results"]] == ["q4"]
    assert owner_client.get(url, {"metric": "nonsense"}).status_code == 400


def test_the_openapi_schema_describes_the_evalcore_endpoints(owner_client):
    schema = owner_client.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    for path in ("/api/evalsets/import/", "/api/runs/import/", "/api/gate/", "/api/runs/{run_id}/rows/"):
        assert path in schema


# ---------------------------------------------------------------------------------------------
# What the pages show
# ---------------------------------------------------------------------------------------------


def test_the_comparison_page_shows_the_overall_status_the_forest_plot_and_the_rows_that_changed_most(
    owner_client, world
):
    comparison = world["comparison"]
    assert comparison.overall == "block"
    page = owner_client.get(reverse("evalcore:comparison", args=[comparison.pk])).content.decode()
    assert "OVERALL: BLOCK" in page
    assert '<svg xmlns="http://www.w3.org/2000/svg"' in page and 'class="forest-plot"' in page
    assert "fp-margin" in page and "fp-zero" in page  # the margin and zero lines
    # the blocking metric is chosen: 15 questions fell from 0.5 to 0.0 faithfulness, each shown for both runs
    assert '<option value="faithfulness" selected>' in page
    changed = page.split('<div id="changed">')[1]
    assert changed.count('<details class="panel changed">') == 15
    for qid in ("q1", "q2", "q3", "x09"):
        assert f'<span class="mono">{qid}</span>' in changed
    assert "0.500 → 0.000" in changed and "(-0.500)" in changed
    assert "Baseline: base" in changed and "Candidate: cand" in changed
    assert "unsupported" in changed and "supported" in changed
    assert "paired on the 15 questions both runs answered" in page


def test_the_changed_rows_partial_switches_metric_with_htmx(owner_client, world):
    url = reverse("evalcore:comparison", args=[world["comparison"].pk])
    response = owner_client.get(url, {"metric": "faithfulness", "partial": "changed"}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert body.strip().startswith('<div id="changed">') and "<svg" not in body
    none = owner_client.get(url, {"metric": "recall@3", "partial": "changed"}, HTTP_HX_REQUEST="true").content.decode()
    assert "No question's recall@3 changed between the runs." in none


def test_the_run_page_shows_coverage_for_a_partial_run(owner_client, world):
    page = owner_client.get(reverse("evalcore:run", args=[world["cand"].pk])).content.decode()
    assert "Partial run:" in page and "15 of 25 questions (60 %)" in page
    assert "Every mean below covers only these rows." in page
    assert "15 / 25" in page  # rows / questions in the summary table, slice "all"
    full = owner_client.get(reverse("evalcore:run", args=[world["base"].pk])).content.decode()
    assert "Partial run:" not in full and "25 / 25" in full


def test_the_runs_list_and_the_api_state_the_coverage(owner_client, world):
    data = owner_client.get(f"/api/runs/{world['cand'].pk}/").json()
    assert (data["row_count"], data["question_count"], data["coverage"]) == (15, 25, 0.6)
    assert data["summary"]["slices"]["all"]["coverage"] == 0.6


def test_the_rows_page_filters_by_slice_and_metric_range(owner_client, run):
    url = reverse("evalcore:rows", args=[run.pk])
    policy = owner_client.get(url, {"type": "policy"}).content.decode()
    assert '<span class="mono">q1</span>' in policy and '<span class="mono">q3</span>' in policy
    assert '<span class="mono">q2</span>' not in policy
    ranged = owner_client.get(url, {"metric": "recall@3", "low": "0.75"}).content.decode()
    assert '<span class="mono">q2</span>' in ranged and '<span class="mono">q1</span>' not in ranged
    assert '<span class="mono">q4</span>' not in ranged  # unanswerable: recall undefined, never in a range
    partial = owner_client.get(url, {"type": "billing"}, HTTP_HX_REQUEST="true").content.decode()
    assert partial.strip().startswith('<div id="rows">')


def test_the_row_detail_shows_context_answer_and_claims(owner_client, world):
    row = Row.objects.get(run=world["base"], question__qid="q1")
    page = owner_client.get(reverse("evalcore:row", args=[world["base"].pk, row.pk])).content.decode()
    assert "text one" in page and "An answer." in page and "stated" in page
    assert "supported" in page and "unsupported" in page


def test_the_version_page_lists_questions_and_runs(owner_client, world):
    page = owner_client.get(reverse("evalcore:version", args=["support", 1])).content.decode()
    assert "What is the refund window?" in page and "base" in page and "cand" in page


def test_the_compare_form_starts_a_gate_job_that_links_to_the_comparison(owner_client, world):
    response = owner_client.post(
        reverse("evalcore:compare"),
        {
            "base": world["base"].pk,
            "candidate": world["cand"].pk,
            "slice_by": "none",
            "margin": 0.02,
            "metrics": "faithfulness",
            "judge_policy": "off",
        },
    )
    assert response.status_code == 302
    job = Job.objects.filter(kind="gate").get()
    assert job.status == "succeeded", job.error
    comparison = Comparison.objects.get(pk=job.result["comparison_id"])
    assert comparison.overall == "block" and comparison.metrics == ["faithfulness"] and comparison.judge_policy == "off"
    page = owner_client.get(response["Location"]).content.decode()
    assert f'href="{reverse("evalcore:comparison", args=[comparison.pk])}"' in page


def test_the_compare_form_sets_lower_is_better_as_the_api_and_the_cli_do(owner_client, world):
    owner_client.post(
        reverse("evalcore:compare"),
        {
            "base": world["base"].pk,
            "candidate": world["cand"].pk,
            "slice_by": "none",
            "margin": 0.02,
            "metrics": "faithfulness",
            "lower_is_better": "faithfulness",
            "judge_policy": "off",
        },
    )
    comparison = Comparison.objects.get(pk=Job.objects.filter(kind="gate").get().result["comparison_id"])
    faithfulness = comparison.decisions.get(metric="faithfulness")
    assert faithfulness.higher_is_better is False and faithfulness.status == "pass"  # a drop is an improvement here


def test_the_compare_form_refuses_runs_on_different_versions(owner_client, world, tmp_path):
    make_eval_set(folder=tmp_path / "v2", questions=QUESTIONS[:2], name="support")
    newer = make_run(folder=tmp_path / "v2", rows=[ok_row("q1")], evalset="support@2", name="newer", k=3)
    response = owner_client.post(
        reverse("evalcore:compare"),
        {
            "base": world["base"].pk,
            "candidate": newer.pk,
            "slice_by": "type",
            "margin": 0.02,
        },
    )
    assert response.status_code == 400
    assert "comparisons are paired on one frozen eval set version" in response.content.decode()
    assert not Job.objects.filter(kind="gate").exists()


def test_the_jobs_page_lists_every_job_with_its_status_and_result_link(owner_client, world):
    Job.objects.filter(pk=world["job"].pk).update(status="succeeded", result={"run_id": world["base"].pk})
    page = owner_client.get(reverse("evalcore:jobs")).content.decode()
    assert reverse("evalcore:job", args=[world["job"].pk]) in page
    assert reverse("evalcore:run", args=[world["base"].pk]) in page


def test_the_job_page_shows_progress_while_the_job_runs(owner_client, owner):
    job = Job.objects.create(kind=IMPORT_RUN, params={}, created_by=owner)
    Job.objects.filter(pk=job.pk).update(status="running")
    progress_reporter(job.pk)(1000, 5000, "validating")
    page = owner_client.get(reverse("evalcore:job", args=[job.pk])).content.decode()
    assert 'hx-trigger="every 1s"' in page
    assert 'role="progressbar"' in page and 'aria-valuenow="20"' in page
    assert "1000 of 5000" in page and "validating" in page
    api = owner_client.get(f"/api/jobs/{job.pk}/").json()
    assert (api["done"], api["total"], api["percent"], api["message"]) == (1000, 5000, 20, "validating")


@pytest.mark.django_db(transaction=True)
def test_in_the_embedded_mode_an_upload_returns_at_once_and_the_job_finishes_in_the_background(owner_client, settings):
    settings.EMBEDDED_TASKS_IN_THREAD = True
    started = time.monotonic()
    response = owner_client.post(
        reverse("evalcore:evalsets"), {"file": upload("questions.jsonl", QUESTIONS), "name": "support"}
    )
    assert response.status_code == 302
    job = Job.objects.get()
    deadline = started + 30
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.finished:
            break
        time.sleep(0.1)
    assert job.status == "succeeded", job.error
    assert EvalSetVersion.objects.get(eval_set__name="support").question_count == 5
