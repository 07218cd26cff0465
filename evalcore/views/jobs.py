from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django import forms
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET
from django_htmx.http import HttpResponseClientRedirect

from labelstudio_lite.accounts.access import eval_owner_required
from labelstudio_lite.health import workers_consuming

from ..jobs.dispatch import job_snapshot
from ..jobs.errors import BrokerUnavailable
from ..models import Job
from ..services.problems import UserFacingError


def job_form_page(
    request: HttpRequest,
    form: forms.Form,
    *,
    start: Callable[[dict[str, Any]], Job],
    template: str,
    context: Callable[[], dict[str, Any]],
    error_field: str | None = None,
) -> HttpResponse:
    """The page of a form that asks for a job: on a valid POST, ``start(cleaned_data)`` and go to the job's page.

    Otherwise the page is shown with the form (and ``context()``): on a GET, or after a POST with
    an invalid form or a refusal (its message added to the form at ``error_field``), with status 400,
    or 503 when the broker did not take the job (nothing queued, the upload deleted).
    """
    status = 400 if request.method == "POST" else 200
    if request.method == "POST" and form.is_valid():
        try:
            job = start(form.cleaned_data)
        except UserFacingError as error:
            form.add_error(error_field, str(error))
        except BrokerUnavailable as error:  # nothing was queued and the upload was not kept: say so, on the form
            form.add_error(None, str(error))
            status = 503
        else:
            url = reverse("evalcore:job", args=[job.pk])
            return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    return render(request, template, {**context(), "form": form}, status=status)


#: Where the form that asks for each kind of job lives, so a failed job leads back to it (``?retry=ID``).
JOB_FORMS: dict[str, Callable[[Job], str]] = {}


def register_job_form(kind: str, url: Callable[[Job], str]) -> None:
    """Say where the form of jobs of ``kind`` is (``url(job)``), so their page can lead back to it when they fail."""
    JOB_FORMS[kind] = url


def job_form_url(job: Job) -> str | None:
    """The form that asked for this failed job, to come back to with its values (None if it has none)."""
    url_of = JOB_FORMS.get(job.kind)
    if url_of is None or job.status != Job.Status.FAILED:
        return None
    url, _, anchor = url_of(job).partition("#")
    return f"{url}{'&' if '?' in url else '?'}retry={job.pk}" + (f"#{anchor}" if anchor else "")


def retried_job(request: HttpRequest, kind: str) -> Job | None:
    """The failed job of ``kind`` that ``?retry=ID`` names: its form comes back with its values and problems."""
    raw = request.GET.get("retry", "")
    if not raw.isdigit():
        return None
    return Job.objects.filter(pk=int(raw), kind=kind, status=Job.Status.FAILED).first()


def values_of(job: Job | None, form: type[forms.Form], **renamed: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    """A failed job's parameters as its form's initial values (JSON objects as text); ``renamed`` computes the others."""
    if job is None:
        return {}
    params = job.params or {}
    values: dict[str, Any] = {}
    for name in form.base_fields:
        if name in renamed:
            values[name] = renamed[name](params)
        elif name in params and params[name] is not None:
            value = params[name]
            values[name] = json.dumps(value, indent=2) if isinstance(value, dict | list) else value
    return values


def job_result_url(job: Job) -> str | None:
    """Where the finished job's result lives, if it has a page."""
    result = job.result or {}
    if "comparison_id" in result:
        return reverse("evalcore:comparison", args=[result["comparison_id"]])
    if "run_id" in result:
        return reverse("evalcore:run", args=[result["run_id"]])
    if "version_id" in result:
        return reverse("evalcore:version", args=[result["eval_set"], result["version"]])
    if "url" in result:
        return str(result["url"])
    return None


@require_GET
@eval_owner_required
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    job = job_snapshot(get_object_or_404(Job, pk=job_id))
    context = {
        "job": job,
        "result_url": job_result_url(job),
        "form_url": job_form_url(job),
        # in the embedded mode the job runs in the server's own process: nobody waits for a worker
        "waiting": "starting" if settings.CELERY_TASK_ALWAYS_EAGER else "waiting for a worker",
        # a queued job with no worker to take it: say so instead of "0 queued" for ever
        "workers": workers_consuming() if job.status == Job.Status.QUEUED else None,
    }
    template = "evalcore/job.html#progress" if request.htmx else "evalcore/job.html"
    return render(request, template, context)


@require_GET
@eval_owner_required
def job_list(request: HttpRequest) -> HttpResponse:
    jobs = [job_snapshot(job) for job in Job.objects.select_related("created_by")[:100]]
    return render(request, "evalcore/jobs.html", {"jobs": [(job, job_result_url(job)) for job in jobs]})
