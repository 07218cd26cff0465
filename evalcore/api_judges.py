"""The judge API: judge configs, judging a run (with its estimate first), re-scoring a baseline, cancelling a job.

One view per operation, eval owners only, as in :mod:`evalcore.api`. Judging is a job: the POST
answers 202 with it. An API key is never part of what these endpoints take or return: a config
names the environment variable that holds it.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response

from .api import EvalOwnerAPIView, JobOutput, Pagination, _accepted, _page, _valid
from .jobs.dispatch import job_snapshot
from .jobs.kinds import JudgeRunParams, RescoreParams, request_judge_run, request_rescore_baseline
from .jobs.runner import job_cancel
from .models import Comparison, Job, JudgeConfig, Run
from .selectors import run_by_ref
from .services.judge_configs import judge_config_as_dict, judge_config_create
from .services.judge_fitness import judge_validation, judge_validations
from .services.judge_runs import CLAIM_MODES, judge_run_estimate
from .services.problems import ImportFailed, UserFacingError

JudgeConfigOutput = inline_serializer(
    "JudgeConfig",
    {
        "name": serializers.CharField(allow_null=True),
        "config_hash": serializers.CharField(),
        "model": serializers.CharField(),
        "runnable": serializers.BooleanField(),
    },
)


def judge_config_detail(config: JudgeConfig) -> dict:
    """A config with the campaigns that validated it and how it did, and the runs it scored."""
    return {
        "id": config.pk,
        **judge_config_as_dict(config),
        "validation": judge_validation(config).as_dict(),
        "measurements": [v.as_dict() for v in judge_validations(config)],
        "runs": [
            {"id": r.pk, "name": r.name, "eval_set": r.version.label}
            for r in config.runs.select_related("version__eval_set")
        ],
    }


def _refused(error: UserFacingError) -> Response:
    problems = [p.as_dict() for p in error.problems] if isinstance(error, ImportFailed) else []
    return Response({"detail": str(error), "problems": problems}, status=status.HTTP_400_BAD_REQUEST)


class JudgeConfigListApi(EvalOwnerAPIView):
    parser_classes = [JSONParser]
    pagination_class = Pagination

    @extend_schema(
        responses=inline_serializer(
            "JudgeConfigRow",
            {"name": serializers.CharField(allow_null=True), "config_hash": serializers.CharField()},
            many=True,
        ),
        summary="Judge configs (imported and runnable), newest first",
        operation_id="judge_configs_list",
    )
    def get(self, request: Request) -> Response:
        return _page(self, request, JudgeConfig.objects.order_by("-created_at", "-id"), _ConfigRow)

    @extend_schema(
        request=inline_serializer(
            "JudgeConfigInput", {"name": serializers.CharField(), "model": serializers.CharField()}
        ),
        responses={201: JudgeConfigOutput, 200: JudgeConfigOutput},
        summary="Create a runnable judge config from its JSON (the same name and content updates its endpoint)",
    )
    def post(self, request: Request) -> Response:
        if not isinstance(request.data, dict):
            return Response({"detail": "send the judge config as a JSON object"}, status=400)
        try:
            result = judge_config_create(raw=dict(request.data), user=request.user)
        except UserFacingError as error:
            return _refused(error)
        body = {**judge_config_detail(result.config), "message": result.message}
        return Response(body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


class _ConfigRow(serializers.Serializer):
    def to_representation(self, config: JudgeConfig) -> dict:
        return {"id": config.pk, "name": config.name, "label": str(config), **judge_config_as_dict(config)}


class JudgeConfigDetailApi(EvalOwnerAPIView):
    @extend_schema(responses=JudgeConfigOutput, summary="A judge config: its pinned content, validations and runs")
    def get(self, request: Request, config_id: int) -> Response:
        return Response(judge_config_detail(get_object_or_404(JudgeConfig, pk=config_id)))


class JudgeRunInput(serializers.Serializer):
    judge_config = serializers.IntegerField(min_value=1, max_value=2**63 - 1, help_text="the judge config's id")
    claims = serializers.ChoiceField(choices=CLAIM_MODES, default="keep")
    name = serializers.SlugField(max_length=150, required=False, help_text="the new run's name (default RUN-by-CONFIG)")


class JudgeEstimateApi(EvalOwnerAPIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("judge_config", int, required=True),
            OpenApiParameter("claims", str, enum=CLAIM_MODES),
        ],
        responses=inline_serializer(
            "JudgeEstimate", {"calls": serializers.IntegerField(), "cost": serializers.FloatField()}
        ),
        summary="What judging the run would cost (calls, tokens, money, time), before starting; calls nothing",
    )
    def get(self, request: Request, run_id: int) -> Response:
        run = get_object_or_404(Run.objects.select_related("version__eval_set"), pk=run_id)
        data = _valid(JudgeRunInput, request.query_params)
        config = get_object_or_404(JudgeConfig, pk=data["judge_config"])
        if not config.runnable:
            return Response({"detail": f"judge config {config.label} cannot be run by the tool"}, status=400)
        estimate = judge_run_estimate(run=run, config=config, claims=data["claims"])
        return Response({**estimate.as_dict(), "line": estimate.line})


class JudgeRunApi(EvalOwnerAPIView):
    parser_classes = [JSONParser]

    @extend_schema(
        request=JudgeRunInput, responses={202: JobOutput}, summary="Judge every row of a run into a new run (a job)"
    )
    def post(self, request: Request, run_id: int) -> Response:
        run = get_object_or_404(Run, pk=run_id)
        data = _valid(JudgeRunInput, request.data)
        params = JudgeRunParams(
            run=run.pk, judge_config=data["judge_config"], claims=data["claims"], name=data.get("name")
        )
        return _accepted(request_judge_run, params, request)


class RescoreApi(EvalOwnerAPIView):
    parser_classes = [JSONParser]

    class RescoreInput(serializers.Serializer):
        base = serializers.CharField(help_text="run name or #id")
        candidate = serializers.CharField(help_text="run name or #id")
        evalset = serializers.CharField(required=False, help_text="NAME or NAME@VERSION, when run names repeat")
        comparison = serializers.IntegerField(required=False, help_text="a comparison whose options to keep")
        claims = serializers.ChoiceField(choices=CLAIM_MODES, default="keep")

    @extend_schema(
        request=RescoreInput,
        responses={202: JobOutput},
        summary="Re-score the older of two runs with the newer run's judge, then compare them (a job)",
    )
    def post(self, request: Request) -> Response:
        data = _valid(self.RescoreInput, request.data)
        try:
            base = run_by_ref(data["base"], evalset=data.get("evalset"))
            candidate = run_by_ref(data["candidate"], evalset=data.get("evalset"))
        except UserFacingError as error:
            return Response({"detail": str(error)}, status=400)
        comparison = Comparison.objects.filter(pk=data.get("comparison")).first() if data.get("comparison") else None
        params = rescore_params(base=base, candidate=candidate, comparison=comparison, claims=data["claims"])
        return _accepted(request_rescore_baseline, params, request)


def rescore_params(*, base: Run, candidate: Run, comparison: Comparison | None, claims: str) -> RescoreParams:
    """Re-score ``base`` against ``candidate``, with the options of the comparison that left judge metrics out."""
    if comparison is None or {comparison.base_id, comparison.candidate_id} != {base.pk, candidate.pk}:
        return RescoreParams(base=base.pk, candidate=candidate.pk, claims=claims)
    return RescoreParams(
        base=base.pk,
        candidate=candidate.pk,
        slice_by=comparison.slice_by or None,
        margins=dict(comparison.margins),
        lower_is_better=sorted({d.metric for d in comparison.decisions.all() if not d.higher_is_better}),
        judge_policy=comparison.judge_policy,
        claims=claims,
    )


class JobCancelApi(EvalOwnerAPIView):
    @extend_schema(
        request=None,
        responses={200: JobOutput, 409: OpenApiResponse(description="the job has already ended: nothing to cancel")},
        summary="Ask a job to stop (a judge job keeps what it paid for)",
    )
    def post(self, request: Request, job_id: int) -> Response:
        try:
            job = job_cancel(job=get_object_or_404(Job, pk=job_id), user=request.user)
        except UserFacingError as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        return Response(JobOutput(job_snapshot(job)).data)
