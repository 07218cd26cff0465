from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_http_methods

from labelstudio_lite.accounts.access import eval_owner_required

from ..charts import ForestRow, forest_plot_svg, responsive
from ..forms import ChangedRowsForm, CompareForm
from ..jobs.kinds import GateParams, request_gate
from ..models import Comparison, Job, Run
from ..selectors import (
    CHANGED_KEPT,
    CHANGED_SHOWN,
    changed_count,
    changed_items,
    changed_rows,
    changed_rows_list,
    comparisons_list,
    stored_changes,
    stored_items,
)
from ..services.comparisons import family_sentence, headline_decision, reviews_to_settle
from .jobs import job_form_page
from .paging import CountedPaginator


@require_http_methods(["GET", "POST"])
@eval_owner_required
def compare(request: HttpRequest) -> HttpResponse:
    initial = {k: request.GET[k] for k in ("base", "candidate") if k in request.GET}
    form = CompareForm(request.POST or None, initial=initial)

    def start(data: dict) -> Job:
        return request_gate(
            params=GateParams(
                base=data["base"].pk,
                candidate=data["candidate"].pk,
                metrics=data["metrics"],
                slice_by=None if data["slice_by"] == "none" else "type",
                margin=data["margin"],
                margins=data["margins"],
                lower_is_better=data["lower_is_better"],
                judge_policy=data["judge_policy"] or None,
                correction=data["correction"] or None,
                judge_correction=data["judge_correction"] or "none",
            ),
            user=request.user,
        )

    return job_form_page(
        request,
        form,
        start=start,
        template="evalcore/compare.html",
        context=lambda: {"comparisons": comparisons_list()[:20], "run_count": Run.objects.count()},
    )


@require_GET
@eval_owner_required
def comparison_detail(request: HttpRequest, comparison_id: int) -> HttpResponse:
    comparison = get_object_or_404(
        Comparison.objects.select_related(
            "base__version__eval_set", "candidate", "created_by", "base__judge_config", "candidate__judge_config"
        ),
        pk=comparison_id,
    )
    decisions = list(comparison.decisions.all())
    metric = request.GET.get("metric") or (
        next((d.metric for d in decisions if d.status == comparison.overall), None) or (comparison.metrics or [None])[0]
    )
    if metric not in comparison.metrics:
        metric = comparison.metrics[0] if comparison.metrics else None
    context = {
        "comparison": comparison,
        "decisions": decisions,
        "headline": [d for d in decisions if d.slice == "all"],
        "worst": headline_decision(decisions, comparison.overall),
        "metric": metric,
        "changed": changed_rows(comparison, metric) if metric else [],
        "changed_total": ((comparison.changed or {}).get(metric) or {}).get("count"),
        "judge": next((d.judge_validation for d in decisions if d.judge_validation), None),
        "judge_metrics": sorted({d.metric for d in decisions if d.judge_validation}),
        "to_settle": reviews_to_settle(decisions),
        "family_sentence": family_sentence(
            correction=comparison.correction, family_size=comparison.family_size, confidence=comparison.confidence
        ),
    }
    total = context["changed_total"]
    context["changed_more"] = (
        len(context["changed"]) >= CHANGED_SHOWN if total is None else total > len(context["changed"])
    )
    if request.htmx and request.GET.get("partial") == "changed":
        return render(request, "evalcore/comparison.html#changed", context)
    rows = [
        ForestRow(d.metric, d.slice, d.mean, d.low, d.high, d.margin, d.status, d.higher_is_better, d.n)
        for d in decisions
    ]
    context["plot"] = responsive(forest_plot_svg(rows), forest_plot_svg(rows, compact=True))
    return render(request, "evalcore/comparison.html", context)


#: Changed rows listed a page: the first page is what the comparison kept (no sort of the runs).
CHANGED_PAGE = min(50, CHANGED_KEPT)


@require_GET
@eval_owner_required
def changed_rows_page(request: HttpRequest, comparison_id: int) -> HttpResponse:
    """Every question whose score on a metric changed between the runs, largest change first, a page at a time."""
    comparison = get_object_or_404(
        Comparison.objects.select_related("base__version__eval_set", "candidate"), pk=comparison_id
    )
    form = ChangedRowsForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    metric = filters.get("metric") or (comparison.metrics[0] if comparison.metrics else "")
    if metric not in comparison.metrics:
        form.add_error("metric", f"this comparison has no metric {metric!r}")
        metric = comparison.metrics[0] if comparison.metrics else ""
    direction = filters.get("direction") or "all"
    rows = changed_rows_list(comparison, metric, direction=direction)
    paginator = CountedPaginator(
        rows, CHANGED_PAGE, count=changed_count(comparison, metric, direction=direction, changes=rows)
    )
    page = paginator.get_page(filters.get("page"))
    kept = stored_changes(comparison, metric, direction=direction, limit=CHANGED_PAGE) if page.number == 1 else None
    context = {
        "comparison": comparison,
        "form": form,
        "metric": metric,
        "direction": direction,
        "page": page,
        "items": stored_items(kept) if kept is not None else changed_items(comparison, page.object_list),
    }
    template = "evalcore/changed_rows.html#list" if request.htmx else "evalcore/changed_rows.html"
    return render(request, template, context)
