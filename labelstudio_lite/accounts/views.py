"""People and access pages: owners invite, deactivate and reset people and see who labelled what; everyone
manages their own API tokens; a one-time link lets a person set their password.

Each POST is one service call. A secret (a link, a password, a token's key) is shown in the answer
to the POST that made it, once: it is never put in a message, a cookie, a redirect or a log, and
the page is sent with ``Cache-Control: no-store``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalcore.services.problems import UserFacingError
from labelstudio_lite.labelling.models import Campaign
from labelstudio_lite.labelling.selectors import work_by_person
from labelstudio_lite.labelling.services.people import person_invite, person_set_active

from .access import eval_owner_required, is_eval_owner
from .forms import InviteForm, LinkPasswordForm, PersonActionForm, TokenForm
from .models import AccessLink, ApiToken
from .selectors import people_list, person_detail, tokens_of
from .services import Access, AccessError, access_link_create, access_link_find, access_link_use, password_reset
from .tokens import token_create, token_revoke


def _shown_once(request: HttpRequest, access: Access) -> dict[str, Any]:
    """What a page shows once of a new way in: the whole link (with this site's address) or the password."""
    return {
        "username": access.user.username,
        "url": request.build_absolute_uri(access.link.path) if access.link else "",
        "expires_at": access.link.link.expires_at if access.link else None,
        "password": access.password or "",
    }


def _people_page(request: HttpRequest, form: InviteForm, *, made: dict | None = None, status: int = 200):
    users = people_list()
    work = work_by_person(user_ids=[u.pk for u in users])
    for user in users:
        user.work = work.get(user.pk, [])
        user.answers = sum(w.answers for w in user.work)
    return render(
        request,
        "accounts/people.html",
        {"form": form, "people": users, "made": made, "has_campaigns": Campaign.objects.exists()},
        status=status,
    )


@never_cache
@require_http_methods(["GET", "POST"])
@eval_owner_required
def people(request: HttpRequest) -> HttpResponse:
    """Everyone with where they stand and what they labelled; the invitation form (its link or password shown once)."""
    if request.method == "GET":
        chosen = Campaign.objects.filter(name=request.GET.get("campaign", "")).values_list("pk", flat=True)
        return _people_page(request, InviteForm(initial={"campaigns": list(chosen)}))
    form = InviteForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            access = person_invite(
                username=data["username"],
                role=data["role"],
                email=data["email"],
                access=data["access"],
                campaigns=data["campaigns"],
                by=request.user,
            )
        except UserFacingError as error:
            form.add_error(error.field if error.field in form.fields else None, str(error))
        else:
            made = {**_shown_once(request, access), "campaigns": [c.name for c in data["campaigns"]], "invited": True}
            return _people_page(request, InviteForm(), made=made, status=201)
    return _people_page(request, form, status=400)


def _person_page(request: HttpRequest, user_id: int, *, made: dict | None = None, status: int = 200):
    person_ = person_detail(user_id)
    if person_ is None:
        raise Http404("No such person.")
    context = {
        "person": person_,
        "work": work_by_person(user_ids=[person_.pk]).get(person_.pk, []),
        "made": made,
        "is_self": person_.pk == request.user.pk,
        "now": timezone.now(),
    }
    return render(request, "accounts/person.html", context, status=status)


@never_cache
@require_GET
@eval_owner_required
def person(request: HttpRequest, user_id: int) -> HttpResponse:
    """One person: where they stand, what they labelled in each campaign, their tokens, what to do about them."""
    return _person_page(request, user_id)


@never_cache
@require_POST
@eval_owner_required
def person_access(request: HttpRequest, user_id: int) -> HttpResponse:
    """Deactivate, bring back, reset the password (link or new password) or invite again; a new secret is shown once."""
    target = get_object_or_404(get_user_model(), pk=user_id)
    back = reverse("accounts:person", args=[target.pk])
    form = PersonActionForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose what to do.")
        return redirect(back)
    action = form.cleaned_data["action"]
    try:
        if action in ("deactivate", "reactivate"):
            person_set_active(user=target, active=action == "reactivate", by=request.user)
            messages.success(
                request,
                f"{target.username} can log in again."
                if action == "reactivate"
                else f"{target.username} is deactivated: logged out, tokens and links refused, held items back in the pool.",
            )
            return redirect(back)
        if action == "invite-again":
            access = Access(
                target, link=access_link_create(user=target, purpose=AccessLink.Purpose.INVITE, by=request.user)
            )
        else:
            access = password_reset(user=target, access=action.removeprefix("reset-"), by=request.user)
    except UserFacingError as error:
        messages.error(request, str(error))
        return redirect(back)
    return _person_page(request, target.pk, made={**_shown_once(request, access), "action": action})


def _tokens_page(request: HttpRequest, form: TokenForm, *, made: dict | None = None, status: int = 200):
    return render(
        request, "accounts/tokens.html", {"form": form, "tokens": tokens_of(request.user), "made": made}, status=status
    )


@never_cache
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    """Your API tokens: make one (its key shown once), see when each was last used, revoke one."""
    if request.method == "GET":
        return _tokens_page(request, TokenForm())
    form = TokenForm(request.POST)
    if form.is_valid():
        try:
            made = token_create(user=request.user, name=form.cleaned_data["name"], by=request.user)
        except UserFacingError as error:
            form.add_error("name", str(error))
        else:
            return _tokens_page(request, TokenForm(), made={"key": made.key, "name": made.token.name}, status=201)
    return _tokens_page(request, form, status=400)


@require_POST
def token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    """Revoke one of your tokens (an eval owner may revoke anyone's, from their People page); 404 for another's."""
    tokens_ = ApiToken.objects.select_related("user")
    if not is_eval_owner(request.user):
        tokens_ = tokens_.filter(user=request.user)
    token = get_object_or_404(tokens_, pk=token_id)
    token_revoke(token=token, by=request.user)
    messages.success(
        request, f"Revoked the token {token.name!r} ({token.prefix}…): requests sending it are refused now."
    )
    if token.user_id != request.user.pk:
        return redirect("accounts:person", token.user_id)
    return redirect("accounts:tokens")


@login_not_required
@never_cache
@require_http_methods(["GET", "POST"])
def link(request: HttpRequest, token: str) -> HttpResponse:
    """A one-time link: set your password, and you are logged in. Opening it spends nothing (mail scanners open links)."""
    try:
        found = access_link_find(token=token)
    except AccessError as error:
        return render(request, "accounts/link.html", {"problem": str(error)}, status=410)
    form = LinkPasswordForm(found.user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = access_link_use(token=token, password=form.cleaned_data["new_password1"])
        except AccessError as error:
            form.add_error(None, str(error))
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, f"Your password is set, {user.username}: you are logged in.")
            return redirect("home")
    status = 400 if request.method == "POST" else 200
    return render(request, "accounts/link.html", {"form": form, "link": found}, status=status)
