"""Fixtures for the judge tests: a runnable config pointed at the fake judge (``fake_judge``, in
``tests/conftest.py``), and a run the fake judge scores predictably (``make_literal_run``)."""

from __future__ import annotations

import pytest

from evalcore.models import JudgeConfig, Run
from evalcore.services.judge_configs import judge_config_create
from tests.factories import make_literal_run, runnable_judge


@pytest.fixture
def judge(db, fake_judge) -> JudgeConfig:
    """A runnable judge config ('literal-judge') that calls the fake judge."""
    return judge_config_create(raw=runnable_judge(fake_judge.base_url)).config


@pytest.fixture
def literal_run(db, tmp_path) -> Run:
    """Run 'base' on eval set 'lit': 8 rows of two claims; the fake judge finds faithfulness 1.0 on rows 0 and 4, else 0.5."""
    return make_literal_run(folder=tmp_path)
