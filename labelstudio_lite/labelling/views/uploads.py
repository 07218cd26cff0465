"""Pages that take a file: save it, ask for the import job, show the job (or say why it was refused)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from evalcore.models import Job
from evalcore.services.problems import UserFacingError
from evalcore.services.uploads import save_upload


def import_upload(
    request: HttpRequest, *, form: forms.Form, back: str, invalid: Callable[[forms.Form], str], start: Callable[[str, str, dict[str, Any]], Job]
) -> HttpResponse:
    """Save the form's ``file`` and call ``start(path, display_name, cleaned_data)``, which asks for the import job.

    To the job's page when it was accepted; back to ``back`` with the message when the form is
    invalid (``invalid(form)``) or the request was refused.
    """
    if not form.is_valid():
        messages.error(request, invalid(form))
        return redirect(back)
    upload = form.cleaned_data["file"]
    try:
        job = start(str(save_upload(upload)), upload.name, form.cleaned_data)
    except UserFacingError as error:
        messages.error(request, str(error))
        return redirect(back)
    return redirect(reverse("evalcore:job", args=[job.pk]))
