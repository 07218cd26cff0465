"""Migrations 0008 and 0009 keep every existing campaign, label and judge report as a faithfulness
campaign with the same numbers; certificates and guideline versions are append-only in the database."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from labelstudio_lite.labelling.models import Campaign, Certificate, Guideline, Label
from labelstudio_lite.labelling.services.judge_report import judge_report
from tests import factories

BEFORE = [("labelling", "0007_leases_follow_the_setting_and_pages_claim_campaigns")]


def _migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def _latest():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.mark.django_db(transaction=True)
def test_a_campaign_from_before_the_migration_keeps_its_report_numbers(tmp_path, owner, annotator, other_annotator):
    run = factories.make_marked_run(folder=tmp_path / "m", n=12)
    campaign = factories.make_campaign(run=run, name="old", overlap=2, annotators=[annotator, other_annotator])
    for user in (annotator, other_annotator):
        factories.label_items(
            campaign=campaign, user=user, value=lambda item: "unsupported" if item.position % 4 == 0 else "supported"
        )
    before = judge_report(campaign).as_dict()
    labels = sorted(Label.objects.values_list("item_id", "annotator_id", "value"))
    try:
        _migrate(BEFORE)
        with connection.cursor() as cursor:
            columns = {c.name for c in connection.introspection.get_table_description(cursor, "labelling_campaign")}
        assert "metric" not in columns  # really the schema of before
        _migrate(_latest())
    finally:
        _migrate(_latest())
    campaign = Campaign.objects.get(name="old")
    assert (campaign.metric, campaign.scale, campaign.shows) == ("faithfulness", "binary", "context")
    assert (campaign.pass_word, campaign.fail_word) == ("Supported", "Unsupported")
    assert list(Guideline.objects.filter(campaign=campaign).values_list("version", flat=True)) == [1]
    assert set(Label.objects.values_list("guideline_version", flat=True)) == {1}
    assert sorted(Label.objects.values_list("item_id", "annotator_id", "value")) == labels
    assert judge_report(campaign).as_dict() == before
    assert before["overall"]["n"] == 12 and before["overall"]["failures"] == 3


def _certificate(config) -> Certificate:
    return Certificate.objects.create(
        judge_config=config,
        config_hash=config.config_hash,
        model=config.model,
        prompt_hash=config.prompt_hash,
        metric="faithfulness",
        guideline_version=1,
        definition={},
        definition_hash="d",
        campaign="c",
        source="judge report",
        state="trusted",
        items=1,
        failure_items=0,
        fingerprint="f",
    )


def test_the_database_refuses_to_rewrite_or_delete_a_certificate(small_run):
    certificate = _certificate(small_run.judge_config)
    for sql in ("UPDATE labelling_certificate SET state = 'untrusted'", "DELETE FROM labelling_certificate"):
        with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql)
    with pytest.raises(ValueError, match="never rewritten"):
        certificate.save()
    with pytest.raises(ValueError, match="never deleted"):
        Certificate.objects.all().delete()
    assert Certificate.objects.get().state == "trusted"


def test_the_database_refuses_to_rewrite_a_guideline_version(campaign):
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE labelling_guideline SET text = 'changed'")
    assert Guideline.objects.get(campaign=campaign).text == ""
