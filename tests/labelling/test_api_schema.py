"""schemathesis against the live schema, as an eval owner and as an annotator: every operation, every
method, every check (status codes, content types, response bodies and headers against the schema,
schema-valid data accepted, schema-invalid data refused, authentication not ignored, no server
error). The schema must tell the truth about every answer.

Bounded (a few examples per operation, deterministic generation) so both runs take under three
minutes; marked ``slow``, so CI runs it and ``./dev test`` stays fast.
"""

from __future__ import annotations

import subprocess

import pytest

from evalcore.jobs.kinds import IMPORT_RUN
from evalcore.models import Job
from evalcore.services.comparisons import compare_runs
from labelstudio_lite.accounts.tokens import token_create
from tests.factories import JUDGE, QUESTIONS, make_eval_set, make_run, ok_row

from .schemathesis_cli import st_run

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

#: Operations whose schema-valid input can still name what does not exist or cannot serve (an eval
#: set, a run, a metric, an item the annotator does not hold, a judge config that cannot run, two
#: runs scored by the same judge to re-score, a judge config whose prompt template is wrong): they
#: answer 400 naming the field, as documented.
REFERENCES = (
    "^/api/(runs/import|evalsets/import|campaigns/\\\\{name\\\\}/labels/import|gate|runs|runs/\\\\{run_id\\\\}/rows"
    "|campaigns/\\\\{name\\\\}/(exports|judge-report/publish)"
    "|label/\\\\{name\\\\}/(labels|skip)|runs/\\\\{run_id\\\\}/judge(/estimate)?|campaigns/\\\\{name\\\\}/try-prompt"
    "|judge-configs|rescore|plan/(labels|questions)|campaign-plan"
    "|campaigns/\\\\{name\\\\}/bias(/estimate)?|bias-probes|campaigns|campaigns/\\\\{name\\\\}/guideline)/$"
)


def config(*, campaign: str, verdicts: int, job: int, run: int, comparison: int) -> str:
    return f"""
[parameters]
"path.name" = "{campaign}"
"path.job_id" = {job}
"path.run_id" = {run}
"path.comparison_id" = {comparison}
verdicts = {verdicts}

[[operations]]
include-path = "/api/evalsets/{{name}}/versions/{{number}}/questions/"
parameters = {{ "path.name" = "support", "path.number" = 1 }}

[[operations]]
include-path-regex = "{REFERENCES}"
[operations.checks.positive_data_acceptance]
expected-statuses = ["2xx", "400", "401", "403", "404", "409"]
"""


def fuzz(url: str, token: str, toml: str, tmp_path) -> subprocess.CompletedProcess:
    phases = "examples,coverage,fuzzing,stateful"
    return st_run(
        url, token, toml, tmp_path, "--checks", "all", "--max-examples", "3", "--workers", "1", "--phases", phases
    )


@pytest.fixture
def world(tuned_campaign, owner, tmp_path, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"user": "100000/minute"}}
    campaign, verdict_set = tuned_campaign.campaign, tuned_campaign.verdict_set
    make_eval_set(folder=tmp_path / "support", questions=QUESTIONS, name="support")
    rows = [ok_row(q["id"]) for q in QUESTIONS]
    base = make_run(folder=tmp_path / "support", rows=rows, evalset="support", name="base", k=3, judge_config=JUDGE)
    cand = make_run(folder=tmp_path / "support", rows=rows, evalset="support", name="cand", k=3, judge_config=JUDGE)
    comparison = compare_runs(base=base, candidate=cand, user=owner, judge_policy="off").comparison
    job = Job.objects.create(kind=IMPORT_RUN, params={}, created_by=owner)
    return config(campaign=campaign.name, verdicts=verdict_set.pk, job=job.pk, run=base.pk, comparison=comparison.pk)


@pytest.mark.parametrize("who", ["owner", "annotator"])
def test_the_api_answers_as_its_schema_says_for_every_operation_method_and_check(
    who, world, live_server, owner, annotator, tmp_path
):
    user = owner if who == "owner" else annotator
    result = fuzz(live_server.url, token_create(user=user, name="tests").key, world, tmp_path)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in result.stdout or "No issues found" in result.stdout, result.stdout[-2000:]
