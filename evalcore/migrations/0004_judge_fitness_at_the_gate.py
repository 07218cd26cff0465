from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("evalcore", "0003_job_kinds_registered")]

    operations = [
        migrations.AddField(
            model_name="comparison",
            name="judge_policy",
            field=models.CharField(
                default="review", help_text="What an unvalidated or unfit judge did to judge metrics.", max_length=10
            ),
        ),
        migrations.AddField(
            model_name="comparison",
            name="judge_rates",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="Each run's judge pass rate, raw and corrected for the judge's errors.",
            ),
        ),
        migrations.AddField(
            model_name="gatedecisionrecord",
            name="judge_validation",
            field=models.JSONField(
                blank=True, help_text="For judge metrics: the judge's validation against people.", null=True
            ),
        ),
        migrations.AddField(
            model_name="gatedecisionrecord",
            name="data_status",
            field=models.CharField(
                choices=[("pass", "Pass"), ("review", "Review"), ("block", "Block")],
                default="review",
                help_text="What the data alone said, before the judge policy.",
                max_length=10,
            ),
            preserve_default=False,
        ),
        # decisions logged before the judge policy existed: the data alone decided them
        migrations.RunSQL("UPDATE evalcore_gatedecisionrecord SET data_status = status", migrations.RunSQL.noop),
    ]
