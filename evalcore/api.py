"""The evalcore REST API for scripts and CI (token or session authentication, eval owners only).

One view per operation, with its own input and output serializers. Imports and gates are jobs:
the POST answers 202 with the job, which ``GET /api/jobs/{id}/`` reports until it is done.
Eval set versions are frozen: no endpoint changes or deletes a question or a version.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evalcore.engine.multiplicity import CORRECTIONS
from labelstudio_lite.accounts.access import IsEvalOwner
from labelstudio_lite.rest import JSONObjectField, JSONParser, Pagination, StrictBooleanField

from .forms import PlanLabelsForm, PlanQuestionsForm
from .jobs.dispatch import job_snapshot
from .jobs.kinds import (
    EvalSetImportParams,
    GateParams,
    RunImportParams,
    request_evalset_import,
    request_gate,
    request_run_import,
)
from .models import Comparison, EvalSet, EvalSetVersion, Job, Run
from .selectors import (
    changed_count,
    changed_items,
    changed_rows_list,
    run_by_ref,
    run_rows,
    runs_on,
    stored_changes,
    stored_items,
)
from .services.comparisons import comparison_as_dict
from .services.judge_correction import JUDGE_CORRECTIONS
from .services.judge_fitness import JUDGE_POLICIES
from .services.planning import plan_labels, plan_questions
from .services.problems import UserFacingError, about_field
from .services.readers import FORMATS
from .services.run_options import GAINS
from .services.trec import TIE_ORDERS
from .services.uploads import discard_upload, save_upload


class EvalOwnerAPIView(APIView):
    permission_classes = [IsEvalOwner]


class JobOutput(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    percent = serializers.IntegerField(read_only=True, allow_null=True)

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "status",
            "done",
            "total",
            "percent",
            "message",
            "result",
            "error",
            "created_at",
            "finished_at",
            "url",
        ]

    def get_url(self, job: Job) -> str:
        return f"/api/jobs/{job.pk}/"


def _accepted(request_job, params, request: Request) -> Response:  # type: ignore[no-untyped-def]
    """Ask for the job through its kind's request function: 202 with the job, or 400 with why it was refused.

    A refusal about one input names it (``{"evalset": ["there is no eval set ..."]}``).
    """
    try:
        job = request_job(params=params, user=request.user)
    except UserFacingError as error:
        return Response(_refusal(error), status=status.HTTP_400_BAD_REQUEST)
    return Response(JobOutput(job).data, status=status.HTTP_202_ACCEPTED, headers={"Location": f"/api/jobs/{job.pk}/"})


class JobDetailApi(EvalOwnerAPIView):
    @extend_schema(responses=JobOutput, summary="A job's status and progress, and its result or error")
    def get(self, request: Request, job_id: int) -> Response:
        return Response(JobOutput(job_snapshot(get_object_or_404(Job, pk=job_id))).data)


class VersionOutput(serializers.ModelSerializer):
    eval_set = serializers.CharField(source="eval_set.name")
    parent = serializers.IntegerField(source="parent.number", allow_null=True, default=None)

    class Meta:
        model = EvalSetVersion
        fields = [
            "id",
            "eval_set",
            "number",
            "parent",
            "content_hash",
            "question_count",
            "source_name",
            "archived",
            "created_at",
        ]


class EvalSetListApi(EvalOwnerAPIView):
    class EvalSetOutput(serializers.ModelSerializer):
        versions = VersionOutput(many=True)

        class Meta:
            model = EvalSet
            fields = ["id", "name", "description", "created_at", "versions"]

    @extend_schema(responses=EvalSetOutput(many=True), summary="Eval sets with their frozen versions")
    def get(self, request: Request) -> Response:
        evalsets = EvalSet.objects.prefetch_related("versions__parent", "versions__eval_set").order_by("name")
        return Response(self.EvalSetOutput(evalsets, many=True).data)


class QuestionListApi(EvalOwnerAPIView):
    pagination_class = Pagination

    class QuestionOutput(serializers.Serializer):
        id = serializers.CharField(source="qid")
        question = serializers.CharField(source="text")
        type = serializers.CharField(source="qtype")
        tags = serializers.JSONField()
        answerable = serializers.BooleanField()
        reference_answer = serializers.CharField()
        gold = serializers.JSONField()

    @extend_schema(responses=QuestionOutput(many=True), summary="The questions of one frozen version (read only)")
    def get(self, request: Request, name: str, number: int) -> Response:
        version = get_object_or_404(EvalSetVersion, eval_set__name=name, number=number)
        return _page(self, request, version.questions.order_by("qid"), self.QuestionOutput)


class EvalSetImportApi(EvalOwnerAPIView):
    parser_classes = [MultiPartParser]

    class EvalSetImportInput(serializers.Serializer):
        file = serializers.FileField()
        name = serializers.SlugField(max_length=100)
        format = serializers.ChoiceField(choices=FORMATS, required=False)
        extend = StrictBooleanField(required=False, default=False)
        base = serializers.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
        topics = serializers.FileField(
            required=False, help_text="TREC qrels: the topics' text ('qid<TAB>text' lines or an SGML topics file)"
        )
        description = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(
        request=EvalSetImportInput,
        responses={202: JobOutput},
        summary="Import questions as a new frozen version (a job)",
    )
    def post(self, request: Request) -> Response:
        data = _valid(self.EvalSetImportInput, request.data)
        path = _save(data["file"], "file")
        try:
            topics = _save(data["topics"], "topics") if data.get("topics") else None
        except serializers.ValidationError:
            discard_upload(path)
            raise
        params = EvalSetImportParams(
            path=path,
            name=data["name"],
            format=data.get("format"),
            display_name=data["file"].name,
            mode="extend" if data["extend"] else "replace",
            base_version=data.get("base"),
            topics_path=topics,
            description=data["description"],
        )
        return _accepted(request_evalset_import, params, request)


class RunOutput(serializers.ModelSerializer):
    eval_set = serializers.CharField(source="version.eval_set.name")
    version = serializers.IntegerField(source="version.number")
    judge_config = serializers.SerializerMethodField()
    coverage = serializers.FloatField(read_only=True)

    class Meta:
        model = Run
        fields = [
            "id",
            "name",
            "eval_set",
            "version",
            "k",
            "gain",
            "row_count",
            "question_count",
            "coverage",
            "system_config",
            "judge_config",
            "summary",
            "source_name",
            "created_at",
        ]

    def get_judge_config(self, run: Run) -> dict | None:
        judge = run.judge_config
        if judge is None:
            return None
        return {
            "id": judge.pk,
            "model": judge.model,
            "model_version": judge.model_version,
            "prompt_hash": judge.prompt_hash,
            "temperature": judge.temperature,
            "claim_splitting": judge.claim_splitting,
            "library_versions": judge.library_versions,
            "config_hash": judge.config_hash,
        }


class RunListApi(EvalOwnerAPIView):
    pagination_class = Pagination

    @extend_schema(
        responses=RunOutput(many=True),
        summary="Runs, newest first",
        parameters=[OpenApiParameter("evalset", str, description="NAME or NAME@VERSION")],
    )
    def get(self, request: Request) -> Response:
        try:
            runs = runs_on(request.query_params.get("evalset"))
        except UserFacingError as error:
            return Response({"evalset": [str(error)]}, status=400)
        return _page(self, request, runs, RunOutput)


class RunDetailApi(EvalOwnerAPIView):
    @extend_schema(responses=RunOutput, summary="A run with its means, intervals and coverage per slice")
    def get(self, request: Request, run_id: int) -> Response:
        run = get_object_or_404(Run.objects.select_related("version__eval_set", "judge_config"), pk=run_id)
        return Response(RunOutput(run).data)


class RowListApi(EvalOwnerAPIView):
    pagination_class = Pagination

    class RowFilterInput(serializers.Serializer):
        type = serializers.CharField(
            required=False, allow_blank=True, max_length=100, help_text="only rows of this question type"
        )
        metric = serializers.CharField(
            required=False, allow_blank=True, max_length=100, help_text="filter on this metric's value"
        )
        min = serializers.FloatField(required=False, help_text="lowest value of the metric (inclusive)")
        max = serializers.FloatField(required=False, help_text="highest value of the metric (inclusive)")

    class RowOutput(serializers.Serializer):
        id = serializers.CharField(source="question.qid")
        type = serializers.CharField(source="question.qtype")
        retrieved = serializers.JSONField()
        context_ids = serializers.JSONField()
        context = serializers.CharField()
        answer = serializers.CharField()
        declined = serializers.BooleanField()
        claims = serializers.JSONField()
        scores = serializers.JSONField()

    @extend_schema(
        responses=RowOutput(many=True),
        summary="A run's per-question rows, filterable by slice and metric range",
        parameters=[RowFilterInput],
    )
    def get(self, request: Request, run_id: int) -> Response:
        run = get_object_or_404(Run, pk=run_id)
        params = _valid(self.RowFilterInput, request.query_params)
        metric = params.get("metric")
        if metric and metric not in run.summary.get("metrics", []):
            return Response(
                {"metric": [f"run {run.name!r} has no metric {metric!r}; it has {run.summary.get('metrics', [])}"]},
                status=400,
            )
        rows = run_rows(run, qtype=params.get("type"), metric=metric, low=params.get("min"), high=params.get("max"))
        whole = not any(params.get(name) not in (None, "") for name in ("type", "metric", "min", "max"))
        return _page(self, request, rows, self.RowOutput, count=run.row_count if whole else None)


class RunImportApi(EvalOwnerAPIView):
    parser_classes = [MultiPartParser]

    class RunImportInput(serializers.Serializer):
        file = serializers.FileField()
        evalset = serializers.CharField(max_length=120, help_text="NAME or NAME@VERSION")
        name = serializers.SlugField(max_length=150)
        format = serializers.ChoiceField(choices=FORMATS, required=False)
        k = serializers.IntegerField(required=False, min_value=1, max_value=10_000)
        cutoffs = serializers.ListField(
            child=serializers.IntegerField(min_value=1, max_value=10_000),
            required=False,
            max_length=20,
            help_text="further cut-offs (recall, precision, nDCG and rr at each)",
        )
        gain = serializers.ChoiceField(
            choices=GAINS, required=False, help_text="default: linear for a TREC run (trec_eval's), else exponential"
        )
        ties = serializers.ChoiceField(
            choices=TIE_ORDERS, default="docno-desc", help_text="TREC runs: order of equal scores"
        )
        missing_topics = serializers.ChoiceField(
            choices=["skip", "fail"], default="skip", help_text="TREC runs: a run topic the eval set lacks"
        )
        chunks = serializers.FileField(required=False)
        judge_config = JSONObjectField(
            required=False, help_text="JSON object: model, model_version, prompt, temperature, claim_splitting, ..."
        )
        system_config = JSONObjectField(required=False, help_text="JSON object: retriever, reranker, chunking, ...")

    @extend_schema(
        request=RunImportInput, responses={202: JobOutput}, summary="Import a run's rows, scored on the way in (a job)"
    )
    def post(self, request: Request) -> Response:
        data = _valid(self.RunImportInput, request.data)
        path = _save(data["file"], "file")
        try:
            chunks = _save(data["chunks"], "chunks") if data.get("chunks") else None
        except serializers.ValidationError:
            discard_upload(path)
            raise
        params = RunImportParams(
            path=path,
            evalset=data["evalset"],
            name=data["name"],
            format=data.get("format"),
            display_name=data["file"].name,
            k=data.get("k"),
            cutoffs=data.get("cutoffs") or [],
            gain=data.get("gain"),
            ties=data["ties"],
            missing_topics=data["missing_topics"],
            judge_config=data.get("judge_config"),
            system_config=data.get("system_config"),
            chunks_path=chunks,
        )
        return _accepted(request_run_import, params, request)


class GateApi(EvalOwnerAPIView):
    parser_classes = [JSONParser, FormParser]

    class GateInput(serializers.Serializer):
        base = serializers.CharField(help_text="run name or #id")
        candidate = serializers.CharField(help_text="run name or #id")
        evalset = serializers.CharField(required=False, help_text="NAME or NAME@VERSION, when run names repeat")
        metrics = serializers.ListField(child=serializers.CharField(), required=False, default=list)
        slice_by = serializers.ChoiceField(choices=["type", "none"], default="type")
        margin = serializers.FloatField(required=False, min_value=0.0)
        margins = serializers.DictField(child=serializers.FloatField(min_value=0.0), required=False, default=dict)
        lower_is_better = serializers.ListField(child=serializers.CharField(), required=False, default=list)
        judge_policy = serializers.ChoiceField(
            choices=JUDGE_POLICIES,
            required=False,
            allow_null=True,
            default=None,
            help_text="what an unvalidated or unfit judge does to judge metrics (default GATE_JUDGE_POLICY)",
        )
        correction = serializers.ChoiceField(
            choices=CORRECTIONS,
            required=False,
            allow_null=True,
            default=None,
            help_text="family-wise correction of 'block' over every metric and slice: holm or none "
            "(default GATE_CORRECTION, holm)",
        )
        judge_correction = serializers.ChoiceField(
            choices=JUDGE_CORRECTIONS,
            default="none",
            help_text="ppi: judge metrics decided on the prediction-powered difference where people labelled both "
            "runs' rows (else the raw judge difference, said so); none: the raw judge difference",
        )

    @extend_schema(
        request=GateInput, responses={202: JobOutput}, summary="Compare two runs and apply the release gate (a job)"
    )
    def post(self, request: Request) -> Response:
        data = _valid(self.GateInput, request.data)
        try:
            base = about_field("base", lambda: run_by_ref(data["base"], evalset=data.get("evalset")))
            candidate = about_field("candidate", lambda: run_by_ref(data["candidate"], evalset=data.get("evalset")))
        except UserFacingError as error:
            return Response(_refusal(error), status=400)
        params = GateParams(
            base=base.pk,
            candidate=candidate.pk,
            metrics=data["metrics"],
            slice_by=None if data["slice_by"] == "none" else "type",
            margin=data.get("margin"),
            margins=data["margins"],
            lower_is_better=data["lower_is_better"],
            judge_policy=data["judge_policy"],
            correction=data["correction"],
            judge_correction=data["judge_correction"],
        )
        return _accepted(request_gate, params, request)


class ComparisonDetailApi(EvalOwnerAPIView):
    @extend_schema(
        responses=inline_serializer(
            "Comparison",
            {
                "id": serializers.IntegerField(),
                "overall": serializers.CharField(),
                "decisions": serializers.ListField(),
            },
        ),
        summary="A logged comparison: every decision with its interval, and the overall status",
    )
    def get(self, request: Request, comparison_id: int) -> Response:
        comparison = get_object_or_404(
            Comparison.objects.select_related("base__version__eval_set", "candidate"), pk=comparison_id
        )
        return Response(comparison_as_dict(comparison))


class ChangedRowsApi(EvalOwnerAPIView):
    pagination_class = Pagination  # the schema then says what the answer is: a page (count, next, results)

    class ChangedInput(serializers.Serializer):
        metric = serializers.CharField(max_length=100, help_text="one of the comparison's metrics")
        direction = serializers.ChoiceField(
            choices=["all", "down", "up"], default="all", help_text="every change, drops only or rises only"
        )

    class ChangedOutput(serializers.Serializer):
        id = serializers.CharField(source="question.qid")
        type = serializers.CharField(source="question.qtype")
        base = serializers.FloatField(source="base_score")
        candidate = serializers.FloatField(source="cand_score")
        delta = serializers.FloatField()
        base_row = serializers.IntegerField(source="base.pk")
        candidate_row = serializers.IntegerField(source="candidate.pk")

    @extend_schema(
        responses=ChangedOutput(many=True),
        summary="Every question whose score on a metric changed between the two runs, largest change first",
        parameters=[ChangedInput],
    )
    def get(self, request: Request, comparison_id: int) -> Response:
        comparison = get_object_or_404(Comparison, pk=comparison_id)
        params = _valid(self.ChangedInput, request.query_params)
        if params["metric"] not in comparison.metrics:  # the list asked for does not exist: 404, as for a comparison
            return Response(
                {"detail": f"this comparison has no metric {params['metric']!r}; it has {comparison.metrics}"},
                status=404,
            )
        paginator = Pagination()
        rows = changed_rows_list(comparison, params["metric"], direction=params["direction"])
        count = changed_count(comparison, params["metric"], direction=params["direction"], changes=rows)
        paginator.get_count = lambda queryset: count  # type: ignore[method-assign]  # kept with the comparison
        limit, offset = paginator.get_limit(request), paginator.get_offset(request)
        kept = (
            stored_changes(comparison, params["metric"], direction=params["direction"], limit=limit)
            if offset == 0
            else None
        )
        if kept is not None:  # the first page is what the comparison kept: the runs are not sorted
            paginator.request, paginator.limit, paginator.offset, paginator.count = request, limit, offset, count
            items = stored_items(kept)
        else:
            items = changed_items(comparison, paginator.paginate_queryset(rows, request, view=self) or [])
        return paginator.get_paginated_response(self.ChangedOutput(items, many=True).data)


def _form_parameters(form_class: type) -> list[OpenApiParameter]:
    """The query parameters of a planner form, for the schema: the bounds and choices its fields check."""
    parameters = []
    for name, field in form_class.base_fields.items():
        kind = {"IntegerField": "integer", "FloatField": "number"}.get(type(field).__name__)
        schema: dict = {"type": kind or "string"}
        if kind:
            schema.update({key: value for key, value in (("minimum", field.min_value), ("maximum", field.max_value))
                           if value is not None})  # fmt: skip
        if getattr(field, "choices", None):
            schema["enum"] = [value for value, _ in field.choices if value != ""]
        parameters.append(
            OpenApiParameter(
                name,
                schema,
                required=field.required and field.initial is None,
                description=f"{field.label or name}. {field.help_text}".strip(),
            )
        )
    return parameters


def _planned(form_class: type, plan, request: Request) -> Response:  # type: ignore[no-untyped-def]
    """Validate the query string with the planner page's form, plan, and answer the plan as JSON (400 if refused)."""
    initial = {name: field.initial for name, field in form_class.base_fields.items() if field.initial is not None}
    form = form_class({**initial, **request.query_params.dict()})
    if not form.is_valid():
        return Response(form.errors.get_json_data(), status=400)
    try:
        result = plan(**{k: v for k, v in form.cleaned_data.items() if v is not None})
    except UserFacingError as error:
        return Response({"detail": str(error)}, status=400)
    return Response(result.as_dict())


class PlanLabelsApi(EvalOwnerAPIView):
    @extend_schema(
        parameters=_form_parameters(PlanLabelsForm),
        responses=inline_serializer(
            "LabelPlan", {"summary": serializers.CharField(), "report": serializers.DictField()}
        ),
        summary="Plan a labelling campaign with no data: half-widths for a size, and the items a target needs",
    )
    def get(self, request: Request) -> Response:
        return _planned(PlanLabelsForm, plan_labels, request)


class PlanQuestionsApi(EvalOwnerAPIView):
    @extend_schema(
        parameters=_form_parameters(PlanQuestionsForm),
        responses=inline_serializer(
            "QuestionsPlan",
            {"summary": serializers.CharField(), "questions": serializers.IntegerField(allow_null=True)},
        ),
        summary="Plan a paired comparison: the questions that settle a true change with a chosen power",
    )
    def get(self, request: Request) -> Response:
        return _planned(PlanQuestionsForm, plan_questions, request)


def _refusal(error: UserFacingError) -> dict:
    """The body of a 400 for a refusal: ``{field: [message]}`` when it is about one input, else ``{"detail": message}``."""
    return {error.field: [str(error)]} if error.field else {"detail": str(error)}


def _page(
    view: APIView,
    request: Request,
    queryset,
    serializer_class: type[serializers.BaseSerializer],
    *,
    count: int | None = None,
) -> Response:  # type: ignore[no-untyped-def]
    """One page (limit and offset) of ``queryset``, serialized; ``count``, when known, spares counting it."""
    paginator = Pagination()
    if count is not None:
        paginator.get_count = lambda queryset: count  # type: ignore[method-assign]
    page = paginator.paginate_queryset(queryset, request, view=view)
    return paginator.get_paginated_response(serializer_class(page, many=True).data)


def _valid(serializer_class: type[serializers.Serializer], data: object) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _save(upload, field: str) -> str:  # type: ignore[no-untyped-def]
    try:
        return str(save_upload(upload))
    except UserFacingError as error:
        raise serializers.ValidationError({field: [str(error)]}) from None
