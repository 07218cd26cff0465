"""The bias battery's API (eval owners): start a battery (a job), read its cost first, read the stored findings,
add a probe, and the latest bias verdict on a judge config. Every endpoint calls the services the page and the
``judge_bias`` command call."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evalcore.api import JobOutput, _refusal
from evalcore.api import _accepted as job_accepted
from evalcore.engine.multiplicity import CORRECTIONS
from evalcore.jobs.bias_kinds import BiasBatteryParams, bias_params_plan, request_bias_battery
from evalcore.judging.probes import FIELDS, OWNER_KINDS, ProbeSpec
from evalcore.models import JudgeConfig
from evalcore.services.problems import UserFacingError
from labelstudio_lite.accounts.access import IsEvalOwner
from labelstudio_lite.rest import StrictCharField, id_field

from .access import campaign_for_owner
from .bias_selectors import campaign_batteries, certificate_for_gating, latest_bias_verdict
from .models import BiasBattery
from .services.bias_battery import DEFAULT_ALPHA, DEFAULT_BAR, available_probes, bias_estimate, probe_add


def probe_data(spec: ProbeSpec) -> dict[str, Any]:
    return {**spec.pinned, "label": spec.label, "shown": spec.shown, "spec_hash": spec.spec_hash}


def battery_data(battery: BiasBattery) -> dict[str, Any]:
    return {
        "id": battery.pk,
        "campaign": battery.campaign.name,
        "judge_config": battery.judge_config.label,
        "judge_config_id": battery.judge_config_id,
        "metric": battery.metric,
        "blocks_gating": battery.blocks_gating,
        "verdict": battery.verdict,
        "bar": battery.bar,
        "alpha": battery.alpha,
        "correction": battery.correction,
        "items": battery.items,
        "claims": battery.claims,
        "probes": battery.probes,
        "findings": battery.findings,
        "totals": battery.totals,
        "created_at": battery.created_at.isoformat(),
    }


class ProbeOutput(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.IntegerField()
    kind = serializers.CharField()
    field = serializers.CharField()
    text = serializers.CharField(allow_blank=True)
    describes = serializers.CharField()
    label = serializers.CharField()
    shown = serializers.CharField()
    spec_hash = serializers.CharField()


class BatteryOutput(serializers.Serializer):
    id = serializers.IntegerField()
    campaign = serializers.CharField()
    judge_config = serializers.CharField()
    judge_config_id = serializers.IntegerField()
    metric = serializers.CharField()
    blocks_gating = serializers.BooleanField()
    verdict = serializers.CharField()
    bar = serializers.FloatField()
    alpha = serializers.FloatField()
    correction = serializers.CharField()
    items = serializers.IntegerField()
    claims = serializers.IntegerField()
    probes = serializers.ListField(child=serializers.DictField())
    findings = serializers.ListField(
        child=serializers.DictField(), help_text="per probe and direction: flips, interval, p-values, decision, words"
    )
    totals = serializers.DictField()
    created_at = serializers.CharField()


class BatteriesOutput(serializers.Serializer):
    batteries = BatteryOutput(many=True)
    probes = ProbeOutput(many=True)


class EstimateOutput(serializers.Serializer):
    rows = serializers.IntegerField(help_text="tuning items probed")
    sampled_rows = serializers.IntegerField()
    calls = serializers.IntegerField()
    cached_calls = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    cost = serializers.FloatField()
    currency = serializers.CharField()
    seconds = serializers.FloatField()
    note = serializers.CharField()
    line = serializers.CharField()
    probes = serializers.ListField(child=serializers.CharField())


class VerdictOutput(serializers.Serializer):
    blocks_gating = serializers.BooleanField()
    words = serializers.CharField()
    battery = serializers.IntegerField()
    campaign = serializers.CharField()
    judge_config = serializers.CharField()
    metric = serializers.CharField()
    bar = serializers.FloatField()
    claims = serializers.IntegerField()
    created_at = serializers.CharField()
    findings = serializers.ListField(child=serializers.CharField())


class GatingOutput(serializers.Serializer):
    state = serializers.ChoiceField(choices=["trusted", "untrusted", "inconclusive"])
    certificate = serializers.IntegerField(allow_null=True)
    reasons = serializers.ListField(child=serializers.CharField())


class VerdictEnvelope(serializers.Serializer):
    verdict = VerdictOutput(allow_null=True)
    gating = GatingOutput(allow_null=True, help_text="the judge's certificate with the bias part; null: neither exists")


class ProbeCreated(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.IntegerField()
    spec_hash = serializers.CharField()


class EstimateQuery(serializers.Serializer):
    judge_config = id_field(help_text="a runnable judge config's id")
    probes = serializers.CharField(required=False, max_length=2000, help_text="comma-separated; none: every probe")
    bar = serializers.FloatField(min_value=0, max_value=0.99, default=DEFAULT_BAR)
    alpha = serializers.FloatField(min_value=0.001, max_value=0.5, default=DEFAULT_ALPHA)
    correction = serializers.ChoiceField(choices=list(CORRECTIONS), default="holm")


class BiasBatteryInput(serializers.Serializer):
    judge_config = id_field(help_text="a runnable judge config's id")
    probes = serializers.ListField(
        child=StrictCharField(max_length=120), required=False, help_text="name or name@vN; none: every probe"
    )
    bar = serializers.FloatField(min_value=0, max_value=0.99, default=DEFAULT_BAR)
    alpha = serializers.FloatField(min_value=0.001, max_value=0.5, default=DEFAULT_ALPHA)
    correction = serializers.ChoiceField(choices=list(CORRECTIONS), default="holm")


class BiasBatteryApi(APIView):
    permission_classes = [IsEvalOwner]

    @extend_schema(
        responses={200: BatteriesOutput}, summary="A campaign's bias batteries, newest first, with findings; the probes"
    )
    def get(self, request: Request, name: str) -> Response:
        campaign = campaign_for_owner(request.user, name)
        batteries = campaign_batteries(campaign).select_related("campaign")[:50]
        return Response(
            {"batteries": [battery_data(b) for b in batteries], "probes": [probe_data(p) for p in available_probes()]}
        )

    @extend_schema(request=BiasBatteryInput, responses={202: JobOutput}, summary="Run a bias battery (a job)")
    def post(self, request: Request, name: str) -> Response:
        campaign = campaign_for_owner(request.user, name)
        data = BiasBatteryInput(data=request.data)
        data.is_valid(raise_exception=True)
        params = BiasBatteryParams(campaign=campaign.name, **data.validated_data)
        return job_accepted(request_bias_battery, params, request)


class BiasEstimateApi(APIView):
    permission_classes = [IsEvalOwner]

    @extend_schema(
        parameters=[EstimateQuery],
        responses={200: EstimateOutput},
        summary="What a bias battery would cost: calls, tokens, money and time (nothing is called)",
    )
    def get(self, request: Request, name: str) -> Response:
        campaign = campaign_for_owner(request.user, name)
        data = EstimateQuery(data=request.query_params)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        values["probes"] = [p for p in values.pop("probes", "").split(",") if p]
        try:
            plan = bias_params_plan(BiasBatteryParams(campaign=campaign.name, **values))
            estimate = bias_estimate(plan)
        except UserFacingError as error:
            return Response(_refusal(error), status=status.HTTP_400_BAD_REQUEST)
        return Response({**estimate.as_dict(), "line": estimate.line, "probes": [p.label for p in plan.probes]})


class BiasProbeInput(serializers.Serializer):
    name = StrictCharField(max_length=100, help_text="letters, digits, - and _ (checked as every name is)")
    kind = serializers.ChoiceField(choices=list(OWNER_KINDS))
    field = serializers.ChoiceField(choices=list(FIELDS))
    text = StrictCharField(max_length=5000)
    describes = StrictCharField(max_length=300)


class BiasProbeApi(APIView):
    permission_classes = [IsEvalOwner]

    @extend_schema(
        responses={200: inline_serializer("BiasProbesOutput", {"probes": ProbeOutput(many=True)})},
        summary="The probes a battery can run (built-in and the owners')",
    )
    def get(self, request: Request) -> Response:
        return Response({"probes": [probe_data(p) for p in available_probes()]})

    @extend_schema(
        request=BiasProbeInput, responses={201: ProbeCreated}, summary="Add a probe (a new version if its text changed)"
    )
    def post(self, request: Request) -> Response:
        data = BiasProbeInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            probe = probe_add(user=request.user, **data.validated_data)
        except UserFacingError as error:
            return Response(_refusal(error), status=status.HTTP_400_BAD_REQUEST)
        return Response(
            {"name": probe.name, "version": probe.version, "spec_hash": probe.spec_hash}, status=status.HTTP_201_CREATED
        )


class JudgeBiasVerdictApi(APIView):
    permission_classes = [IsEvalOwner]

    @extend_schema(
        parameters=[OpenApiParameter("metric", str, description="default faithfulness")],
        responses={200: VerdictEnvelope},
        summary="The latest bias verdict on a judge config (what its certificate reads); null when none ran",
    )
    def get(self, request: Request, config_id: int) -> Response:
        config = get_object_or_404(JudgeConfig, pk=config_id)
        metric = request.query_params.get("metric", "faithfulness")
        verdict = latest_bias_verdict(config, metric)
        gating = certificate_for_gating(config, metric)
        return Response(
            {
                "verdict": verdict.as_dict() if verdict else None,
                "gating": None
                if gating is None
                else {
                    "state": gating.state,
                    "certificate": gating.certificate.pk if gating.certificate else None,
                    "reasons": list(gating.reasons),
                },
            }
        )
