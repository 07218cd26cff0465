"""API tokens stored hashed, and one-time links; DRF's clear-text tokens moved over as digests.

Before this migration, tokens came from DRF's ``rest_framework.authtoken`` (``drf_create_token``),
which keeps every key in clear in ``authtoken_token``. Each such key becomes an ``ApiToken`` holding
its SHA-256 digest, so scripts keep working with the key they have; then the clear-text table is
dropped (and DRF's app forgotten), so no key stays readable in the database.
"""

import datetime
import hashlib

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models
from django.utils.dateparse import parse_datetime


def _aware(value):
    """A timestamp as the raw cursor gives it (text on SQLite, naive or aware), as an aware datetime."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is None:
        return django.utils.timezone.now()
    return value if value.tzinfo else value.replace(tzinfo=datetime.UTC)


def move_drf_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if "authtoken_token" not in connection.introspection.table_names():
        return  # a new database, or DRF's tokens were never installed
    ApiToken = apps.get_model("accounts", "ApiToken")
    with connection.cursor() as cursor:
        cursor.execute("SELECT key, user_id, created FROM authtoken_token")
        rows = cursor.fetchall()
    for key, user_id, created in rows:
        ApiToken.objects.create(
            user_id=user_id,
            name="made with drf_create_token",
            digest=hashlib.sha256(key.encode("utf-8")).hexdigest(),
            prefix=key[:12],
            created_at=_aware(created),
        )
    schema_editor.execute("DROP TABLE authtoken_token")
    schema_editor.execute("DELETE FROM django_migrations WHERE app = 'authtoken'")


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="AccessLink",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "purpose",
                    models.CharField(choices=[("invite", "Invitation"), ("reset", "Password reset")], max_length=10),
                ),
                ("digest", models.CharField(max_length=64, unique=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("expires_at", models.DateTimeField()),
                ("used_at", models.DateTimeField(blank=True, null=True)),
                (
                    "revoked_at",
                    models.DateTimeField(blank=True, help_text="Replaced by a newer link, or withdrawn.", null=True),
                ),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="access_links",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-id"],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("purpose__in", ["invite", "reset"])), name="access_link_purpose"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("used_at__isnull", True), ("revoked_at__isnull", True), _connector="OR"),
                        name="access_link_used_or_revoked",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="ApiToken",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(help_text="What it is for (a CI job, a notebook).", max_length=100)),
                ("digest", models.CharField(max_length=64, unique=True)),
                (
                    "prefix",
                    models.CharField(help_text="The key's first characters, to tell tokens apart.", max_length=12),
                ),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("last_used_at", models.DateTimeField(blank=True, null=True)),
                ("revoked_at", models.DateTimeField(blank=True, null=True)),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="api_tokens",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-id"],
                "constraints": [
                    models.CheckConstraint(condition=models.Q(("name", ""), _negated=True), name="api_token_named")
                ],
            },
        ),
        migrations.RunPython(move_drf_tokens, migrations.RunPython.noop),
    ]
