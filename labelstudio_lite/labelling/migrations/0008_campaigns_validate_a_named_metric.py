"""A campaign validates one named judge metric, with a label set and a versioned guideline.

Every campaign so far validated faithfulness with supported / unsupported / can't tell: the new
fields' defaults say exactly that (metric faithfulness, binary, the context shown), so every
existing campaign, label and judge report keeps its numbers. Each campaign's guidance becomes
its guideline version 1, and every existing label was given under it.
"""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


def guideline_one(apps, schema_editor):
    Campaign = apps.get_model("labelling", "Campaign")
    Guideline = apps.get_model("labelling", "Guideline")
    Guideline.objects.bulk_create(
        [
            Guideline(campaign_id=pk, version=1, text=guidance, created_at=created_at, created_by_id=created_by)
            for pk, guidance, created_at, created_by in Campaign.objects.values_list(
                "pk", "guidance", "created_at", "created_by_id"
            )
        ]
    )


class Migration(migrations.Migration):
    dependencies = [
        ("evalcore", "0011_gate_decisions_carry_their_tests_and_family"),
        ("labelling", "0007_leases_follow_the_setting_and_pages_claim_campaigns"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Certificate",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("config_hash", models.CharField(max_length=64)),
                (
                    "model",
                    models.CharField(help_text="The judge's model as pinned (for staleness in words).", max_length=200),
                ),
                ("prompt_hash", models.CharField(max_length=64)),
                ("metric", models.CharField(max_length=100)),
                ("guideline_version", models.PositiveIntegerField()),
                (
                    "definition",
                    models.JSONField(help_text="The metric as the campaign defined it (scale, threshold, question)."),
                ),
                ("definition_hash", models.CharField(max_length=64)),
                (
                    "campaign",
                    models.CharField(help_text="The campaign measured (kept if it is deleted).", max_length=100),
                ),
                ("source", models.CharField(help_text="judge report, or held-out re-measurement", max_length=40)),
                ("slice", models.CharField(blank=True, default="", max_length=200)),
                (
                    "state",
                    models.CharField(
                        choices=[("trusted", "Trusted"), ("untrusted", "Untrusted"), ("inconclusive", "Inconclusive")],
                        max_length=12,
                    ),
                ),
                ("kappa", models.FloatField(blank=True, null=True)),
                ("kappa_low", models.FloatField(blank=True, null=True)),
                ("kappa_high", models.FloatField(blank=True, null=True)),
                ("miss_rate", models.FloatField(blank=True, null=True)),
                ("miss_low", models.FloatField(blank=True, null=True)),
                ("miss_high", models.FloatField(blank=True, null=True)),
                ("items", models.PositiveIntegerField()),
                ("failure_items", models.PositiveIntegerField()),
                ("more_failure_labels", models.PositiveIntegerField(blank=True, null=True)),
                ("reasons", models.JSONField(default=list)),
                ("bars", models.JSONField(default=dict)),
                (
                    "fingerprint",
                    models.CharField(help_text="Hash of what was measured: the same twice is one row.", max_length=64),
                ),
                (
                    "measured_at",
                    models.DateTimeField(blank=True, help_text="The newest label or verdict it rests on.", null=True),
                ),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                "ordering": ["-created_at", "-id"],
            },
        ),
        migrations.CreateModel(
            name="Guideline",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("version", models.PositiveIntegerField()),
                ("text", models.TextField(blank=True)),
            ],
            options={
                "ordering": ["campaign", "version"],
            },
        ),
        migrations.AddField(
            model_name="adjudication",
            name="score",
            field=models.SmallIntegerField(blank=True, help_text="Ordinal campaigns: the final score.", null=True),
        ),
        migrations.AddField(
            model_name="campaign",
            name="fail_at",
            field=models.FloatField(
                blank=True, help_text="Ordinal: scores at or below this are the failure class.", null=True
            ),
        ),
        migrations.AddField(
            model_name="campaign",
            name="fail_word",
            field=models.CharField(default="Unsupported", max_length=40),
        ),
        migrations.AddField(
            model_name="campaign",
            name="judge_pass_at",
            field=models.FloatField(
                blank=True,
                help_text="Binary campaigns on a judge score: the judge passes an answer whose score is at least this.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="campaign",
            name="metric",
            field=models.CharField(
                default="faithfulness", help_text="The judge metric of the run these labels validate.", max_length=100
            ),
        ),
        migrations.AddField(
            model_name="campaign",
            name="pass_word",
            field=models.CharField(default="Supported", max_length=40),
        ),
        migrations.AddField(
            model_name="campaign",
            name="scale",
            field=models.CharField(
                choices=[("binary", "Pass / fail"), ("ordinal", "Ordinal scale")], default="binary", max_length=10
            ),
        ),
        migrations.AddField(
            model_name="campaign",
            name="scale_max",
            field=models.SmallIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="campaign",
            name="scale_min",
            field=models.SmallIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="campaign",
            name="shows",
            field=models.CharField(
                choices=[
                    ("context", "The context the model saw"),
                    ("question", "The question"),
                    ("reference", "The question's reference answer"),
                ],
                default="context",
                help_text="What the metric needs on the page.",
                max_length=10,
            ),
        ),
        migrations.AddField(
            model_name="item",
            name="judge_score",
            field=models.FloatField(
                blank=True,
                help_text="Ordinal campaigns: the judge's score on the scale. Never sent to annotators.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="label",
            name="guideline_version",
            field=models.PositiveIntegerField(default=1, help_text="The guideline version it was given under."),
        ),
        migrations.AddField(
            model_name="label",
            name="score",
            field=models.SmallIntegerField(blank=True, help_text="Ordinal campaigns: the score given.", null=True),
        ),
        migrations.AlterField(
            model_name="item",
            name="judge_supported",
            field=models.BooleanField(help_text="The judge's verdict (pass). Never sent to annotators."),
        ),
        migrations.AddConstraint(
            model_name="campaign",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(
                        ("fail_at__isnull", True),
                        ("scale", "binary"),
                        ("scale_max__isnull", True),
                        ("scale_min__isnull", True),
                    ),
                    models.Q(
                        ("fail_at__gte", models.F("scale_min")),
                        ("fail_at__lt", models.F("scale_max")),
                        ("scale", "ordinal"),
                        ("scale_max__gt", models.F("scale_min")),
                        ("scale_min__isnull", False),
                    ),
                    _connector="OR",
                ),
                name="campaign_label_set_valid",
            ),
        ),
        migrations.AddConstraint(
            model_name="campaign",
            constraint=models.CheckConstraint(
                condition=models.Q(("metric", ""), _negated=True), name="campaign_metric_named"
            ),
        ),
        migrations.AddField(
            model_name="certificate",
            name="judge_config",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name="certificates", to="evalcore.judgeconfig"
            ),
        ),
        migrations.AddField(
            model_name="guideline",
            name="campaign",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="guidelines", to="labelling.campaign"
            ),
        ),
        migrations.AddField(
            model_name="guideline",
            name="created_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddIndex(
            model_name="certificate",
            index=models.Index(fields=["config_hash", "metric", "slice"], name="certificate_key_idx"),
        ),
        migrations.AddConstraint(
            model_name="certificate",
            constraint=models.UniqueConstraint(fields=("fingerprint",), name="certificate_fingerprint_unique"),
        ),
        migrations.AddConstraint(
            model_name="certificate",
            constraint=models.CheckConstraint(
                condition=models.Q(("state__in", ["trusted", "untrusted", "inconclusive"])),
                name="certificate_state_valid",
            ),
        ),
        migrations.AddConstraint(
            model_name="guideline",
            constraint=models.UniqueConstraint(fields=("campaign", "version"), name="guideline_version_unique"),
        ),
        migrations.AddConstraint(
            model_name="guideline",
            constraint=models.CheckConstraint(
                condition=models.Q(("version__gte", 1)), name="guideline_version_positive"
            ),
        ),
        migrations.RunPython(guideline_one, migrations.RunPython.noop),
    ]
