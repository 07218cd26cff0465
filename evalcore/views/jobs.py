from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET
from django_htmx.http import HttpResponseClientRedirect

from labelstudio_lite.accounts.access import eval_owner_required

from ..models import Job
from ..services.jobs import job_snapshot
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
    an invalid form or a refusal (its message added to the form at ``error_field``), with status 400.
    """
    if request.method == "POST" and form.is_valid():
        try:
            job = start(form.cleaned_data)
        except UserFacingError as error:
            form.add_error(error_field, str(error))
        else:
            url = reverse("evalcore:job", args=[job.pk])
            return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    status = 400 if request.method == "POST" else 200
    return render(request, template, {**context(), "form": form}, status=status)


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
    context = {"job": job, "result_url": job_result_url(job)}
    template = "evalcore/job.html#progress" if request.htmx else "evalcore/job.html"
    return render(request, template, context)


@require_GET
@eval_owner_required
def job_list(request: HttpRequest) -> HttpResponse:
    jobs = [job_snapshot(job) for job in Job.objects.select_related("created_by")[:100]]
    return render(request, "evalcore/jobs.html", {"jobs": [(job, job_result_url(job)) for job in jobs]})
