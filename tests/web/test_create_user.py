"""create_user: an operator creates an eval owner or annotators outside the demo; running it again changes nothing."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db


def create_user(*args: str, stdin: str | None = None, monkeypatch=None) -> str:
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    out = io.StringIO()
    call_command("create_user", *args, stdout=out)
    return out.getvalue()


def test_it_creates_an_owner_with_the_password_from_stdin_who_can_log_in(client, monkeypatch):
    said = create_user(
        "olga", "--role", "owner", "--password-stdin", stdin="a-long-pass-phrase\n", monkeypatch=monkeypatch
    )
    assert said.strip() == "Created owner 'olga'."
    user = get_user_model().objects.get(username="olga")
    assert user.role == "eval_owner" and user.is_eval_owner
    response = client.post("/accounts/login/", {"username": "olga", "password": "a-long-pass-phrase"})
    assert response.status_code == 302


def test_it_is_idempotent_and_keeps_the_password_of_an_existing_user(monkeypatch):
    create_user("ann", "--role", "annotator", "--password-stdin", stdin="first-pass-phrase\n", monkeypatch=monkeypatch)
    said = create_user("ann", "--role", "annotator")
    assert "already exists as an annotator; nothing changed" in said
    assert get_user_model().objects.get(username="ann").check_password("first-pass-phrase")


def test_a_new_user_without_a_password_gets_one_printed_once():
    said = create_user("anna", "--role", "annotator")
    assert said.splitlines()[0] == "Created annotator 'anna'."  # not "already exists ... nothing changed"
    assert "already exists" not in said
    password = said.split("Password (shown once): ")[1].strip()
    assert get_user_model().objects.get(username="anna").check_password(password)


def test_with_link_a_new_user_gets_a_one_time_link_to_set_their_own_password(client):
    said = create_user("lena", "--role", "annotator", "--link")
    assert said.splitlines()[0] == "Created annotator 'lena'." and "Password" not in said
    path = said.split("prefix it with this site's address): ")[1].split()[0]
    assert not get_user_model().objects.get(username="lena").has_usable_password()
    done = client.post(path, {"new_password1": "lenas-own-pass", "new_password2": "lenas-own-pass"})
    assert done.status_code == 302
    assert get_user_model().objects.get(username="lena").check_password("lenas-own-pass")
    # the People page's services made it: the invitation shows there
    assert "nothing changed" in create_user("lena", "--role", "annotator", "--link")


def test_it_moves_an_existing_user_to_another_role():
    create_user("bob", "--role", "annotator")
    assert "is now an owner" in create_user("bob", "--role", "owner")
    assert get_user_model().objects.get(username="bob").role == "eval_owner"


def test_a_weak_password_and_a_bad_name_are_refused_in_words(monkeypatch):
    with pytest.raises(CommandError, match="password refused: This password is too short"):
        create_user("carl", "--role", "owner", "--password-stdin", stdin="short\n", monkeypatch=monkeypatch)
    with pytest.raises(CommandError, match="cannot be saved: username"):
        create_user("no spaces allowed!", "--role", "owner")
    assert not get_user_model().objects.exists()
