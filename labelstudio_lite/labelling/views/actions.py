"""Page POSTs that run one service: check the form, call the service, come back with its message.

Every such view is the same translation: an invalid form or a refusal (:class:`UserFacingError`)
goes back with the message; success goes on (or back) with a success message. Views give only
the form, where to go back, and what to run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from evalcore.models import Job
from evalcore.services.problems import UserFacingError
from evalcore.services.uploads import save_upload


@dataclass(frozen=True)
class Done:
    """What a successful action says, and where it goes (back, when None)."""

    message: str = ""
    to: str | None = None


def form_post(
    request: HttpRequest,
    form: forms.Form,
    *,
    back: str,
    invalid: str | Callable[[forms.Form], str],
    run: Callable[[dict[str, Any]], Done],
) -> HttpResponse:
    """Run ``run(cleaned_data)`` if the form is valid; redirect with the message of the outcome."""
    if not form.is_valid():
        messages.error(request, invalid(form) if callable(invalid) else invalid)
        return redirect(back)
    try:
        done = run(form.cleaned_data)
    except UserFacingError as error:
        messages.error(request, str(error))
        return redirect(back)
    if done.message:
        messages.success(request, done.message)
    return redirect(done.to or back)


def import_upload(
    request: HttpRequest,
    *,
    form: forms.Form,
    back: str,
    invalid: str | Callable[[forms.Form], str],
    start: Callable[[str, str, dict[str, Any]], Job],
) -> HttpResponse:
    """Save the form's ``file`` and ask for the import job with ``start(path, display_name, cleaned_data)``; show the job."""

    def run(data: dict[str, Any]) -> Done:
        upload = data["file"]
        job = start(str(save_upload(upload)), upload.name, data)
        return Done(to=reverse("evalcore:job", args=[job.pk]))

    return form_post(request, form, back=back, invalid=invalid, run=run)
