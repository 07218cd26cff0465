from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from labelstudio_lite.accounts.access import eval_owner_required

from ..models import Job
from ..services.jobs import job_snapshot


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
