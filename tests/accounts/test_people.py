"""People from the browser: an eval owner invites (a one-time link or a password, shown once), resets,
deactivates and brings back people, and sees who labelled what; the link works once; nobody locks
out themselves or the last eval owner."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from labelstudio_lite.accounts.models import AccessLink, ApiToken
from labelstudio_lite.accounts.services import AccessError, password_reset, user_invite, user_set_active
from labelstudio_lite.accounts.tokens import token_create
from labelstudio_lite.labelling.models import CampaignAnnotator, Label, Lease
from labelstudio_lite.labelling.services.assignment import held_items
from tests.factories import label_items

pytestmark = pytest.mark.django_db
User = get_user_model()


def log_in_with_password(username: str, password: str) -> Client:
    """A fresh client logged in through the login page (as a person does); asserts that it worked."""
    client = Client()
    response = client.post("/accounts/login/", {"username": username, "password": password})
    assert response.status_code == 302, f"{username} could not log in"
    return client


def can_log_in(username: str, password: str) -> bool:
    return Client().post("/accounts/login/", {"username": username, "password": password}).status_code == 302


def link_from(html: str) -> str:
    return (
        re.search(r'value="(http://testserver/accounts/link/[^"]+/)"', html).group(1).removeprefix("http://testserver")
    )


def invite(client, **fields) -> object:
    data = {"username": "nadia", "role": "annotator", "access": "link", **fields}
    return client.post(reverse("accounts:people"), data)


# ----------------------------------------------------------------------------------------------
# Inviting
# ----------------------------------------------------------------------------------------------


def test_an_owner_invites_an_annotator_with_a_one_time_link_that_works_once(owner_client):
    response = invite(owner_client)

    assert response.status_code == 201
    assert response["Cache-Control"].startswith("max-age=0") and "no-store" in response["Cache-Control"]
    path = link_from(response.content.decode())
    nadia = User.objects.get(username="nadia")
    assert nadia.role == "annotator" and not nadia.has_usable_password()
    assert AccessLink.objects.get(user=nadia).digest not in path  # only the hash is stored
    assert path.split("/")[-2] not in str(list(AccessLink.objects.values_list()))

    anonymous = Client()
    opened = anonymous.get(path)  # opening spends nothing: mail scanners open links
    assert opened.status_code == 200 and b"Welcome, nadia" in opened.content
    assert anonymous.get(path).status_code == 200
    done = anonymous.post(path, {"new_password1": "a-fine-pass-phrase", "new_password2": "a-fine-pass-phrase"})
    assert done.status_code == 302 and done["Location"] == "/"
    assert anonymous.get("/").status_code == 200  # logged in
    assert can_log_in("nadia", "a-fine-pass-phrase")

    again = Client().post(path, {"new_password1": "another-pass-phrase", "new_password2": "another-pass-phrase"})
    assert again.status_code == 410 and b"used already" in again.content
    assert can_log_in("nadia", "a-fine-pass-phrase") and not can_log_in("nadia", "another-pass-phrase")


def test_a_set_password_invitation_is_shown_once_and_never_again(owner_client):
    response = invite(owner_client, username="omar", role="owner", access="password")

    password = re.search(r'id="secret-value" class="mono" readonly value="([^"]+)"', response.content.decode()).group(1)
    assert can_log_in("omar", password)
    assert User.objects.get(username="omar").is_eval_owner
    for page in (reverse("accounts:people"), reverse("accounts:person", args=[User.objects.get(username="omar").pk])):
        assert password not in owner_client.get(page).content.decode()
    assert password not in str(list(User.objects.values_list()))


def test_an_invitee_can_be_put_straight_into_campaigns(owner_client, solo_campaign):
    response = invite(owner_client, campaigns=[solo_campaign.pk])

    assert response.status_code == 201 and b"nadia labels solo" in response.content
    assert CampaignAnnotator.objects.filter(campaign=solo_campaign, user__username="nadia").exists()
    # the campaign page's empty state links here with the campaign chosen
    chosen = owner_client.get(reverse("accounts:people") + "?campaign=solo").content.decode()
    assert re.search(rf'<option value="{solo_campaign.pk}" selected>solo</option>', chosen)


def test_an_invitation_for_a_name_taken_or_malformed_is_refused_in_words_and_creates_nothing(owner_client, annotator):
    taken = invite(owner_client, username="adam")
    assert taken.status_code == 400 and b"already a user named" in taken.content
    bad = invite(owner_client, username="no spaces!")
    assert bad.status_code == 400 and b"cannot be saved: username" in bad.content
    assert sorted(User.objects.values_list("username", flat=True)) == ["adam", "olivia"]
    assert not AccessLink.objects.exists()


def test_an_expired_or_replaced_link_is_refused_and_says_what_to_do(owner):
    first = user_invite(username="nadia", role="annotator", by=owner).link
    second = password_reset(user=first.link.user, by=owner).link  # replaces the first
    assert Client().get(first.path).status_code == 410
    assert b"replaced by a newer one" in Client().get(first.path).content
    AccessLink.objects.filter(pk=second.link.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    expired = Client().get(second.path)
    assert expired.status_code == 410 and b"expired: ask your eval owner for a new one" in expired.content
    assert b"not valid" in Client().get("/accounts/link/not-a-link/").content


def test_a_link_refuses_a_weak_password_and_stays_usable(owner):
    link = user_invite(username="nadia", role="annotator", by=owner).link
    weak = Client().post(link.path, {"new_password1": "short", "new_password2": "short"})
    assert weak.status_code == 400 and b"too short" in weak.content
    assert Client().get(link.path).status_code == 200


# ----------------------------------------------------------------------------------------------
# Resetting, deactivating
# ----------------------------------------------------------------------------------------------


def test_a_reset_by_link_stops_the_old_password_at_once(owner_client, annotator):
    session = log_in_with_password("adam", "annot-pass-123")
    response = owner_client.post(reverse("accounts:person-access", args=[annotator.pk]), {"action": "reset-link"})

    assert response.status_code == 200 and b"one-time link" in response.content
    assert not can_log_in("adam", "annot-pass-123")
    assert session.get("/").status_code == 302  # the open session ended
    path = link_from(response.content.decode())
    assert (
        Client().post(path, {"new_password1": "brand-new-pass", "new_password2": "brand-new-pass"}).status_code == 302
    )
    assert can_log_in("adam", "brand-new-pass")


def test_a_reset_to_a_new_password_shows_it_once_and_it_works(owner_client, annotator):
    response = owner_client.post(reverse("accounts:person-access", args=[annotator.pk]), {"action": "reset-password"})
    password = re.search(r'readonly value="([^"]+)"', response.content.decode()).group(1)
    assert can_log_in("adam", password) and not can_log_in("adam", "annot-pass-123")


def test_deactivating_logs_out_refuses_tokens_and_links_and_frees_held_items_but_keeps_labels(
    owner_client, annotator, campaign
):
    label_items(campaign=campaign, user=annotator, limit=2)
    held_items(campaign=campaign, user=annotator, count=3)
    session = log_in_with_password("adam", "annot-pass-123")
    key = token_create(user=annotator, name="ci").key
    link = password_reset(user=annotator, access="link").link
    annotator.set_password("annot-pass-123")
    annotator.save()

    response = owner_client.post(reverse("accounts:person-access", args=[annotator.pk]), {"action": "deactivate"})

    assert response.status_code == 302
    annotator.refresh_from_db()
    assert not annotator.is_active
    assert session.get("/").status_code == 302
    assert Client().get("/api/label/campaigns/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401
    assert Client().get(link.path).status_code == 410
    assert not can_log_in("adam", "annot-pass-123")
    assert not Lease.objects.active().filter(annotator=annotator).exists()
    assert Label.objects.filter(annotator=annotator).count() == 2
    person = owner_client.get(reverse("accounts:person", args=[annotator.pk])).content.decode()
    assert "deactivated" in person and "Bring adam back" in person

    owner_client.post(reverse("accounts:person-access", args=[annotator.pk]), {"action": "reactivate"})
    assert can_log_in("adam", "annot-pass-123")


def test_nobody_deactivates_themselves_or_the_last_eval_owner(owner, owner_client, django_user_model):
    response = owner_client.post(reverse("accounts:person-access", args=[owner.pk]), {"action": "deactivate"})
    assert response.status_code == 302 and User.objects.get(pk=owner.pk).is_active
    with pytest.raises(AccessError, match="cannot deactivate yourself"):
        user_set_active(user=owner, active=False, by=owner)
    with pytest.raises(AccessError, match="last active eval owner"):
        user_set_active(user=owner, active=False)
    other = django_user_model.objects.create_user("otto", password="otto-pass-123", role="eval_owner")
    user_set_active(user=owner, active=False, by=other)
    assert not User.objects.get(pk=owner.pk).is_active


# ----------------------------------------------------------------------------------------------
# Who labelled what
# ----------------------------------------------------------------------------------------------


def test_the_people_pages_say_who_labelled_what(owner_client, annotator, other_annotator, campaign):
    label_items(campaign=campaign, user=annotator, limit=3)
    label_items(campaign=campaign, user=other_annotator, value="cant_tell", limit=2)

    people = owner_client.get(reverse("accounts:people")).content.decode()
    assert re.search(r"adam</a>.*?<td class=\"num\">3</td>.*?faith</a> \(3\)", people, re.S)
    assert re.search(r"bea</a>.*?<td class=\"num\">2</td>", people, re.S)
    page = owner_client.get(reverse("accounts:person", args=[other_annotator.pk])).content.decode()
    assert re.search(r"faith</a></td><td class=\"num\">0</td><td class=\"num\">2</td>", page)


# ----------------------------------------------------------------------------------------------
# Who may open what
# ----------------------------------------------------------------------------------------------


OWNER_ONLY = ["accounts:people", "accounts:person"]


@pytest.mark.parametrize("name", OWNER_ONLY)
def test_the_people_pages_are_for_eval_owners_only(name, client, annotator_client, owner, annotator):
    url = reverse(name, args=[annotator.pk] if name == "accounts:person" else [])
    assert Client().get(url).status_code == 302  # anonymous: to the login page
    assert annotator_client.get(url).status_code == 403
    posted = annotator_client.post(reverse("accounts:person-access", args=[owner.pk]), {"action": "reset-password"})
    assert posted.status_code == 403
    assert annotator_client.post(reverse("accounts:people"), {"username": "x", "role": "owner"}).status_code == 403
    assert User.objects.count() == 2 and can_log_in("olivia", "owner-pass-123")


def test_a_person_who_does_not_exist_is_a_404(owner_client):
    assert owner_client.get(reverse("accounts:person", args=[999999])).status_code == 404
    assert (
        owner_client.post(reverse("accounts:person-access", args=[999999]), {"action": "deactivate"}).status_code == 404
    )


def test_the_link_page_needs_no_login_and_favicon_is_served(client):
    assert client.get("/accounts/link/whatever/").status_code == 410
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon["Content-Type"] == "image/x-icon"
    assert b"".join(icon.streaming_content)[:4] == b"\x00\x00\x01\x00"  # an ICO file
    assert not ApiToken.objects.exists()
