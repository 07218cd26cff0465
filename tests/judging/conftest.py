"""Fixtures for the judge tests: the fake OpenAI-compatible judge on loopback, a runnable config
pointed at it, and a run the fake judge scores predictably (``make_literal_run``)."""

from __future__ import annotations

import pytest

from evalcore.judging.fakeserver import FakeJudge, FakeJudgeServer
from evalcore.models import JudgeConfig, Run
from evalcore.services.judge_configs import judge_config_create
from tests.factories import make_literal_run, runnable_judge


@pytest.fixture
def fake_judge():
    """The fake judge, started for the test and stopped after it (``.fake`` holds its counters and faults)."""
    with FakeJudgeServer(FakeJudge()) as server:
        yield server


@pytest.fixture
def judge(db, fake_judge) -> JudgeConfig:
    """A runnable judge config ('literal-judge') that calls the fake judge."""
    return judge_config_create(raw=runnable_judge(fake_judge.base_url)).config


@pytest.fixture
def literal_run(db, tmp_path) -> Run:
    """Run 'base' on eval set 'lit': 8 rows of two claims; the fake judge finds faithfulness 1.0 on rows 0 and 4, else 0.5."""
    return make_literal_run(folder=tmp_path)
