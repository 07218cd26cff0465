"""Judge pages (eval owners): configs and who validated them, judging a run (estimate first), re-scoring a
baseline, cancelling a job. Each POST is one service call or one job request."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from labelstudio_lite.accounts.access import eval_owner_required

from ..api_judges import rescore_params
from ..forms import JudgeConfigForm, JudgeRunForm, RescoreForm
from ..jobs.kinds import JudgeRunParams, request_judge_run, request_rescore_baseline
from ..jobs.runner import job_cancel
from ..models import Job, JudgeConfig, Run
from ..services.judge_configs import judge_config_as_dict, judge_config_create
from ..services.judge_fitness import judge_validation, judge_validations
from ..services.judge_runs import default_name, judge_run_estimate
from ..services.problems import ImportFailed, UserFacingError
from .jobs import job_form_page


@require_http_methods(["GET", "POST"])
@eval_owner_required
def judge_list(request: HttpRequest) -> HttpResponse:
    form = JudgeConfigForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            result = judge_config_create(raw=form.cleaned_data["raw"], user=request.user)
        except ImportFailed as error:
            for problem in error.problems:
                form.add_error(None, f"{problem.field or 'config'}: {problem.message}")
        except UserFacingError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, result.message)
            return redirect("evalcore:judge", result.config.pk)
    configs = JudgeConfig.objects.order_by("-created_at", "-id")
    status = 400 if request.method == "POST" else 200
    return render(request, "evalcore/judges.html", {"form": form, "configs": configs}, status=status)


@require_GET
@eval_owner_required
def judge_detail(request: HttpRequest, config_id: int) -> HttpResponse:
    config = get_object_or_404(JudgeConfig, pk=config_id)
    pinned = judge_config_as_dict(config)
    context = {
        "config": config,
        "pinned": {k: v for k, v in pinned.items() if k not in ("few_shot_examples",)},
        "validation": judge_validation(config),
        "measurements": judge_validations(config),
        "runs": config.runs.select_related("version__eval_set", "derived_from").order_by("-created_at"),
    }
    return render(request, "evalcore/judge.html", context)


@require_http_methods(["GET", "POST"])
@eval_owner_required
def judge_run_page(request: HttpRequest, run_id: int) -> HttpResponse:
    """GET shows the form, and the estimate once a config is chosen (a read); POST starts the job."""
    run = get_object_or_404(Run.objects.select_related("version__eval_set", "judge_config"), pk=run_id)
    form = JudgeRunForm(request.POST or None)
    chosen = JudgeRunForm(request.GET) if "judge_config" in request.GET else None
    estimate = None
    if chosen is not None and chosen.is_valid():
        config = chosen.cleaned_data["judge_config"]
        estimate = judge_run_estimate(run=run, config=config, claims=chosen.cleaned_data["claims"])
        if request.method == "GET":  # the start form takes what was estimated; a POST from that page keeps its own
            form = JudgeRunForm(
                initial={**chosen.cleaned_data, "name": chosen.cleaned_data["name"] or default_name(run, config)}
            )

    def start(data: dict) -> Job:
        params = JudgeRunParams(
            run=run.pk, judge_config=data["judge_config"].pk, claims=data["claims"], name=data["name"] or None
        )
        return request_judge_run(params=params, user=request.user)

    context = {"run": run, "estimate": estimate, "chosen": chosen}
    return job_form_page(request, form, start=start, template="evalcore/judge_run.html", context=lambda: context)


@require_POST
@eval_owner_required
def rescore(request: HttpRequest) -> HttpResponse:
    """Re-score the older of two runs with the newer run's judge, then compare (the comparison's options kept)."""
    form = RescoreForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose the two runs to re-score and compare.")
        return redirect("evalcore:compare")
    data = form.cleaned_data
    comparison = data.get("comparison")
    try:
        params = rescore_params(
            base=data["base"], candidate=data["candidate"], comparison=comparison, claims=data["claims"]
        )
        job = request_rescore_baseline(params=params, user=request.user)
    except UserFacingError as error:
        messages.error(request, f"Could not re-score the baseline: {error}")
        if comparison is not None:
            return redirect("evalcore:comparison", comparison.pk)
        return redirect(reverse("evalcore:compare") + f"?base={data['base'].pk}&candidate={data['candidate'].pk}")
    return redirect("evalcore:job", job.pk)


@require_POST
@eval_owner_required
def cancel_job(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(Job, pk=job_id)
    try:
        job_cancel(job=job, user=request.user)
    except UserFacingError as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request, "Asked the job to stop: it stops after the calls in flight; what it paid for is kept."
        )
    return redirect(reverse("evalcore:job", args=[job.pk]))
