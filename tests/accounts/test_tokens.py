"""API tokens: each person makes and revokes their own on the Access page (or with ``api_token``); a key is
shown once and stored as a digest; DRF's clear-text tokens made before keep working, as digests."""

from __future__ import annotations

import hashlib
import importlib
import io
import re

import pytest
from django.apps import apps
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client
from django.urls import reverse

from labelstudio_lite.accounts.models import ApiToken
from labelstudio_lite.accounts.tokens import token_create, token_revoke

pytestmark = pytest.mark.django_db


def api(key: str, path: str = "/api/label/campaigns/") -> int:
    return Client().get(path, HTTP_AUTHORIZATION=f"Token {key}").status_code


def test_a_person_makes_a_token_sees_its_key_once_and_it_works(annotator_client, annotator):
    response = annotator_client.post(reverse("accounts:tokens"), {"name": "my notebook"})

    assert response.status_code == 201 and "no-store" in response["Cache-Control"]
    key = re.search(r'id="secret-value" class="mono" readonly value="([^"]+)"', response.content.decode()).group(1)
    assert key.startswith("lsl_") and len(key) == 47
    token = ApiToken.objects.get(user=annotator)
    assert token.digest == hashlib.sha256(key.encode()).hexdigest() and token.prefix == key[:12]
    assert key not in str(list(ApiToken.objects.values_list()))  # never stored in clear
    assert key not in annotator_client.get(reverse("accounts:tokens")).content.decode()  # never shown again

    assert api(key) == 200
    assert api(key, "/api/runs/") == 403  # an annotator's token is an annotator's
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_a_revoked_token_is_refused_and_only_its_owner_or_an_eval_owner_may_revoke_it(
    annotator_client, annotator, other_annotator, owner
):
    owner_client = Client()
    owner_client.force_login(owner)
    mine = token_create(user=annotator, name="ci")
    theirs = token_create(user=other_annotator, name="theirs")

    assert annotator_client.post(reverse("accounts:token-revoke", args=[theirs.token.pk])).status_code == 404
    assert api(theirs.key) == 200
    assert annotator_client.post(reverse("accounts:token-revoke", args=[mine.token.pk])).status_code == 302
    assert api(mine.key) == 401
    assert owner_client.post(reverse("accounts:token-revoke", args=[theirs.token.pk])).status_code == 302
    assert api(theirs.key) == 401
    assert token_revoke(token=theirs.token).revoked_at is not None  # twice changes nothing


def test_a_token_needs_a_name_and_the_page_says_so(annotator_client):
    response = annotator_client.post(reverse("accounts:tokens"), {"name": "  "})
    assert response.status_code == 400 and b"This field is required" in response.content
    assert not ApiToken.objects.exists()


def test_the_tokens_page_needs_a_login(client):
    assert client.get(reverse("accounts:tokens")).status_code == 302
    assert client.post(reverse("accounts:tokens"), {"name": "x"}).status_code in (302, 403)
    assert not ApiToken.objects.exists()


def test_the_api_token_command_makes_lists_and_revokes(annotator):
    out = io.StringIO()
    call_command("api_token", "create", "adam", "--name", "nightly gate", stdout=out)
    key = out.getvalue().strip().splitlines()[-1]
    assert api(key) == 200

    listed = io.StringIO()
    call_command("api_token", "list", stdout=listed)
    assert key[:12] in listed.getvalue() and key not in listed.getvalue() and "never used" not in listed.getvalue()
    call_command("api_token", "revoke", key[:12], stdout=io.StringIO())
    assert api(key) == 401
    with pytest.raises(CommandError, match="no live token starts with"):
        call_command("api_token", "revoke", key[:12], stdout=io.StringIO())
    with pytest.raises(CommandError, match="no user named"):
        call_command("api_token", "create", "nobody", "--name", "x", stdout=io.StringIO())


@pytest.mark.django_db(transaction=True)
def test_tokens_made_by_drf_before_keep_working_as_digests_and_their_clear_text_table_goes(annotator):
    """What migration 0002 does on a database where drf_create_token made tokens."""
    key = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"  # DRF's format: 40 hex characters
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, user_id bigint, created timestamp)")
        cursor.execute("INSERT INTO authtoken_token VALUES (%s, %s, %s)", [key, annotator.pk, "2026-01-02 03:04:05"])
    migration = importlib.import_module("labelstudio_lite.accounts.migrations.0002_api_tokens_and_access_links")
    with connection.schema_editor() as editor:
        migration.move_drf_tokens(apps, editor)

    assert "authtoken_token" not in connection.introspection.table_names()
    token = ApiToken.objects.get(user=annotator)
    assert token.name == "made with drf_create_token" and token.prefix == key[:12]
    assert api(key) == 200
