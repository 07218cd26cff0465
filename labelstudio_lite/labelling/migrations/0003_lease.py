"""Rename the model Assignment to Lease (what it is); the table, its constraint and index keep their names.

No data changes: the table is pinned to its old name first, so the rename touches only Django's
state, and the reverse accessors' new names (``leases``) live in Python only.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("labelling", "0002_judge_validation"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterModelTable(name="assignment", table="labelling_assignment"),
        migrations.RenameModel(old_name="Assignment", new_name="Lease"),
        migrations.AlterField(
            model_name="lease",
            name="annotator",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="leases", to=settings.AUTH_USER_MODEL
            ),
        ),
        migrations.AlterField(
            model_name="lease",
            name="item",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="leases", to="labelling.item"
            ),
        ),
    ]
