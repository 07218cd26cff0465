"""What a person locked out of logging in sees: the login page, saying why and when to try again.

django-axes counts failed logins per username and address (``LOGIN_FAILURE_LIMIT``) and, past the
limit, refuses every login of that username from that address for ``LOGIN_LOCKOUT_MINUTES``,
the right password included; it logs each failure and each lockout (logger ``axes``).
"""

from __future__ import annotations

import math
from typing import Any

from axes.helpers import get_cool_off
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone


def lockout_response(request: HttpRequest, original_response: Any = None, credentials: Any = None) -> HttpResponse:
    """429 with the login page and ``Retry-After``: too many failed logins, try again at a stated time."""
    cool_off = get_cool_off(request)
    seconds = int(cool_off.total_seconds()) if cool_off else 0
    minutes = max(1, math.ceil(seconds / 60))
    retry_at = timezone.localtime(timezone.now() + cool_off) if cool_off else None
    message = "Too many failed logins for this username from your address: logging in is locked"
    message += (
        f" for {minutes} minute{'s' if minutes != 1 else ''}; try again after {retry_at:%H:%M} ({retry_at:%Z})."
        if retry_at
        else "; ask an administrator to unlock it."
    )
    # an unbound form: binding it would run the authentication backends again; the lockout is the error
    form = AuthenticationForm(request, initial={"username": request.POST.get("username", "")})
    form.cleaned_data = {}
    form.errors  # noqa: B018 (an unbound form's errors: empty, ready for the lockout's)
    form.add_error(None, message)
    response = render(request, "registration/login.html", {"form": form, "locked": True}, status=429)
    if seconds:
        response["Retry-After"] = str(seconds)
    return response
