"""Campaigns follow LABEL_LEASE_SECONDS as it is set; a person's labelling page claims their campaign.

Every campaign so far stored the LABEL_LEASE_SECONDS of the day it was made (no door set another
value), so a change of the setting never reached open campaigns. Their lease is emptied here:
from now on an empty lease means the setting as it is at each hand-out.
"""

from django.db import migrations, models


def follow_the_setting(apps, schema_editor):
    apps.get_model("labelling", "Campaign").objects.update(lease_seconds=None)


class Migration(migrations.Migration):
    dependencies = [
        ("labelling", "0005_exportrecord_report"),
    ]

    operations = [
        migrations.AddField(
            model_name="campaignannotator",
            name="page",
            field=models.CharField(blank=True, max_length=40),
        ),
        migrations.AddField(
            model_name="campaignannotator",
            name="page_seen_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="campaign",
            name="lease_seconds",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="How long an annotator holds an item without activity; empty: the site's LABEL_LEASE_SECONDS, as it is set at each hand-out.",
                null=True,
            ),
        ),
        migrations.RunPython(follow_the_setting, migrations.RunPython.noop),
    ]
