"""Fixtures for the judge-validation tests: runs whose judge verdicts and human labels are chosen
item by item, so the report, the re-measurement and the exports can be checked against numbers
computed by hand.

The data is built by ``tests/factories.py`` through the real import paths: the eval set and the run
are imported from JSON Lines (docs/formats.md), campaigns are created with ``campaign_create`` and
people's labels are imported with ``labels_import`` from CSV.

Most modules share one spec campaign between their tests: the module's ``shared`` fixture builds it
once (``spec_campaign_once``) and yields a :class:`Shared`; the ``case``, ``campaign`` and
``verdict_set`` fixtures below read it back in each test.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from labelstudio_lite.labelling.models import Campaign, VerdictSet
from tests.factories import SpecCase, make_spec_campaign, make_spec_case


@contextmanager
def module_data(django_db_blocker):
    """Data shared by a module's tests: created once in a transaction rolled back after the module.

    Each test still runs in its own savepoint (pytest-django's ``db``), so what a test writes is
    undone after it and the shared rows stay as built.
    """
    from django.db import transaction

    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            yield
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


def shared_owner():
    """The eval owner who creates a module's shared campaign (the ``owner`` persona lives per test)."""
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user("shared-owner", password="shared-pass-123", role="eval_owner")


@dataclass(frozen=True)
class Shared:
    """What a module's shared data holds: the spec case, its campaign and (if any) a verdict set, by primary key."""

    case: SpecCase
    campaign_pk: int
    verdict_set_pk: int | None = None


@contextmanager
def spec_campaign_once(
    django_db_blocker, folder: Path, *, name: str, heldout_fraction: float = 0.0
) -> Iterator[tuple[SpecCase, Campaign]]:
    """The spec run and its labelled campaign ``name``, built once for a module (see :func:`module_data`)."""
    with module_data(django_db_blocker):
        case = make_spec_case(folder=folder)
        campaign = make_spec_campaign(
            case=case, name=name, folder=folder, heldout_fraction=heldout_fraction, user=shared_owner()
        )
        yield case, campaign


@pytest.fixture
def case(shared: Shared, db) -> SpecCase:
    """The spec case of the module's shared data."""
    return shared.case


@pytest.fixture
def campaign(shared: Shared, db) -> Campaign:
    """The campaign of the module's shared data, read again in this test."""
    return Campaign.objects.get(pk=shared.campaign_pk)


@pytest.fixture
def verdict_set(shared: Shared, db) -> VerdictSet:
    """The verdict set of the module's shared data, read again in this test."""
    return VerdictSet.objects.get(pk=shared.verdict_set_pk)
