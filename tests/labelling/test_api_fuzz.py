"""A schema-driven fuzzer (schemathesis) reads every API operation as an eval owner and as an
annotator, with real campaign names, and changes nothing: reading never claims a lease, records an
export or opens a re-measurement, and no generated input makes the server fail."""

from __future__ import annotations

import subprocess

import pytest

from labelstudio_lite.accounts.tokens import token_create

from .schemathesis_cli import st_run
from .snapshots import labelling_state

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def fuzz_reads(url: str, token: str, campaign: str, verdicts: int, tmp_path) -> subprocess.CompletedProcess:
    config = f'[parameters]\n"path.name" = "{campaign}"\nverdicts = {verdicts}\n'
    return st_run(url, token, config, tmp_path, "--include-method", "GET", "-n", "8", "--checks", "not_a_server_error")


def test_fuzzing_every_read_of_the_api_changes_no_campaign(live_server, tuned_campaign, owner, annotator, tmp_path):
    campaign, verdict_set = tuned_campaign.campaign, tuned_campaign.verdict_set
    before = labelling_state()

    for user in (owner, annotator):
        result = fuzz_reads(
            live_server.url, token_create(user=user, name="tests").key, campaign.name, verdict_set.pk, tmp_path
        )
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
        assert "passed" in result.stdout

    assert labelling_state() == before
