"""Fixtures for the labelling tests: small hand-made runs full of marker strings, the demo run, campaigns.

Every row of a hand-made run (``tests.factories.make_marked_run``) carries distinctive markers in
the places an annotator must never see (the judge's rationales, scores, row metadata, retrieved ids
beyond the context, the reference answer), so the blindness tests can assert that none of them
leaves the server.
"""

from __future__ import annotations

import json
from functools import partial
from types import SimpleNamespace

import pytest

from evalcore.models import Run
from evalcore.services.runs import run_import
from labelstudio_lite.labelling.services.remeasure import remeasurement_open
from tests import factories


@pytest.fixture
def small_run(db, tmp_path) -> Run:
    """12 answers of two slices, two claims each; answers 3, 7 and 11 have an unsupported claim."""
    return factories.make_marked_run(folder=tmp_path / "small", n=12)


@pytest.fixture
def demo_run(db, tmp_path) -> Run:
    """The demo's baseline run (400 questions of four types), imported as load_demo does."""
    paths = factories.make_demo_eval_set(folder=tmp_path / "demo")
    return run_import(
        path=paths["base_rows"],
        evalset="support-qa@1",
        name="chunks-512",
        judge_config=factories.demo_judge(paths),
        system_config=json.loads(paths["base_system"].read_text()),
        chunks_path=paths["base_chunks"],
        k=5,
    ).run


@pytest.fixture
def make_campaign(owner):
    """``factories.make_campaign`` with olivia, the eval owner, as the creator."""
    return partial(factories.make_campaign, user=owner)


@pytest.fixture
def campaign(small_run, make_campaign, annotator, other_annotator):
    """All 12 answers of the small run, overlap 2, labelled by adam and bea."""
    return make_campaign(run=small_run, name="faith", overlap=2, annotators=[annotator, other_annotator])


@pytest.fixture
def solo_campaign(small_run, make_campaign, annotator):
    """All 12 answers of the small run, overlap 1, adam alone."""
    return make_campaign(run=small_run, name="solo", overlap=1, annotators=[annotator])


@pytest.fixture
def tuned_campaign(small_run, make_campaign, owner, annotator, tmp_path):
    """All 12 answers of the small run, half held out, overlap 2 (olivia and adam); adam labelled every
    item (every third unsupported); a tuned judge's verdicts on them, whose re-measurement is open."""
    campaign = make_campaign(
        run=small_run, name="tuned", heldout_fraction=0.5, overlap=2, annotators=[owner, annotator]
    )
    factories.label_items(
        campaign=campaign, user=annotator, value=lambda item: "unsupported" if item.position % 3 == 0 else "supported"
    )
    verdict_set = factories.import_verdicts(
        folder=tmp_path,
        campaign=campaign,
        file="tuned.jsonl",
        judge_config={**factories.JUDGE, "prompt": "tuned"},
        records=[{"question_id": factories.qid_of(i), "supported": i % 2 == 0} for i in range(12)],
    ).verdict_set
    remeasurement_open(campaign=campaign, verdict_set=verdict_set, user=owner)
    return SimpleNamespace(campaign=campaign, verdict_set=verdict_set)
