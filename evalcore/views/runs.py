from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers

from labelstudio_lite.accounts.access import eval_owner_required

from ..forms import RowFilterForm, RunImportForm
from ..jobs.kinds import IMPORT_RUN, RunImportParams, request_run_import
from ..models import EvalSet, Job, Row, Run
from ..selectors import run_rows, runs_list
from ..services.runs import gold_note
from ..services.scoring import is_judge_metric
from ..services.uploads import save_upload
from .jobs import job_form_page, register_job_form, retried_job, values_of
from .paging import CountedPaginator, UncountedPage

register_job_form(IMPORT_RUN, lambda job: reverse("evalcore:runs"))

#: Rows listed a page on the rows page.
ROWS_PAGE = 50


@require_http_methods(["GET", "POST"])
@eval_owner_required
def run_list(request: HttpRequest) -> HttpResponse:
    retry = retried_job(request, IMPORT_RUN)
    form = RunImportForm(
        request.POST or None,
        request.FILES or None,
        initial=values_of(retry, RunImportForm, cutoffs=lambda params: ",".join(map(str, params.get("cutoffs") or []))),
    )

    def start(data: dict) -> Job:
        return request_run_import(
            params=RunImportParams(
                path=str(save_upload(data["file"])),
                evalset=data["evalset"],
                name=data["name"],
                format=data["format"] or None,
                display_name=data["file"].name,
                k=data["k"],
                cutoffs=data["cutoffs"],
                gain=data["gain"] or None,
                ties=data["ties"] or "docno-desc",
                missing_topics=data["missing_topics"] or "skip",
                judge_config=data["judge_config"],
                system_config=data["system_config"],
                chunks_path=str(save_upload(data["chunks"])) if data.get("chunks") else None,
            ),
            user=request.user,
        )

    return job_form_page(
        request,
        form,
        start=start,
        template="evalcore/runs.html",
        context=lambda: {"runs": runs_list(), "retry": retry, "evalsets": EvalSet.objects.order_by("name")[:5]},
    )


def _summary_table(run: Run) -> list[dict]:
    """Rows of (slice, coverage, per-metric mean with interval and n) for the run page."""
    summary = run.summary or {}
    metrics = summary.get("metrics", [])
    slices = summary.get("slices", {})
    order = ["all"] + sorted(s for s in slices if s != "all")
    return [
        {"name": name, "data": slices[name], "cells": [(m, slices[name]["metrics"].get(m, {})) for m in metrics]}
        for name in order
        if name in slices
    ]


@require_GET
@eval_owner_required
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(
        Run.objects.select_related("version__eval_set", "judge_config", "created_by", "derived_from"), pk=run_id
    )
    metrics = run.summary.get("metrics", [])
    context = {
        "run": run,
        "metrics": metrics,
        "table": _summary_table(run),
        "judge_metrics": [m for m in metrics if is_judge_metric(m)],
        "gold_note": gold_note(run.summary or {}),
        "other_runs": Run.objects.filter(version=run.version).exclude(pk=run.pk).order_by("-created_at"),
    }
    return render(request, "evalcore/run.html", context)


@require_GET
@eval_owner_required
@vary_on_headers("HX-Request")
def run_rows_page(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("version__eval_set"), pk=run_id)
    form = RowFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    metrics = run.summary.get("metrics", [])
    metric = filters.get("metric") or None
    if metric and metric not in metrics:
        form.add_error("metric", f"{run.name} has no metric {metric!r}")
        metric = None
    rows = run_rows(
        run,
        qtype=filters.get("type") or None,
        metric=metric,
        low=filters.get("low"),
        high=filters.get("high"),
        search=filters.get("q") or None,
    )
    filtered = any(filters.get(name) not in (None, "") for name in ("type", "metric", "low", "high", "q"))
    if filtered:  # no count of what a filter keeps: on 100,000 rows it can cost more than the page
        page: Any = UncountedPage(rows, filters.get("page"), ROWS_PAGE)
    else:  # every row of the run: counted at import
        page = CountedPaginator(rows, ROWS_PAGE, count=run.row_count).get_page(filters.get("page"))
    types = sorted((run.summary.get("slices") or {}).keys() - {"all"})
    context = {"run": run, "form": form, "page": page, "metrics": metrics, "types": types, "filters": filters}
    template = "evalcore/rows.html#rows" if request.htmx else "evalcore/rows.html"
    return render(request, template, context)


@require_GET
@eval_owner_required
def row_detail(request: HttpRequest, run_id: int, row_id: int) -> HttpResponse:
    row = get_object_or_404(Row.objects.select_related("question", "run"), pk=row_id, run_id=run_id)
    # the rows page opens a row in place (htmx); its own address is a whole page, with the site around it
    template = "evalcore/row_detail.html" if request.htmx else "evalcore/row_page.html"
    return render(request, template, {"row": row, "run": row.run})
