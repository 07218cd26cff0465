"""Campaigns API for eval owners: list and create campaigns (a metric and its label set), and the guideline's
versions (read them, write the next). Every write goes through the services the page and the commands use."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evalcore.api import _refusal as refusal
from evalcore.selectors import run_by_ref
from evalcore.services.problems import UserFacingError, about_field
from labelstudio_lite.accounts.access import IsEvalOwner

from .access import campaign_for_owner
from .models import Campaign, Guideline
from .selectors import campaigns_list
from .services.campaigns import ALLOCATIONS, allocation_options, campaign_create, campaign_new_guideline
from .services.label_sets import label_set


def campaign_summary(campaign: Campaign) -> dict[str, Any]:
    """A campaign as the list shows it: its sample, and the metric it validates with its label set."""
    guideline = campaign.guideline
    return {
        "name": campaign.name,
        "run": campaign.run.name,
        "unit": campaign.unit,
        "size": campaign.size,
        "overlap": campaign.overlap,
        "heldout_fraction": campaign.heldout_fraction,
        "seed": campaign.seed,
        "strata": campaign.strata,
        "allocation": campaign.allocation,
        "created_at": campaign.created_at,
        "metric": campaign.metric,
        "label_set": {
            "scale": campaign.scale,
            "pass": campaign.pass_word,
            "fail": campaign.fail_word,
            "scale_min": campaign.scale_min,
            "scale_max": campaign.scale_max,
            "fail_at": campaign.fail_at,
            "words": campaign.scale_words,
            "shows": campaign.shows,
        },
        "guideline_version": guideline.version if guideline else 1,
    }


class CampaignSummary(serializers.Serializer):
    """A campaign as the list and the create answer show it (for the schema: the views build plain dicts)."""

    name = serializers.CharField()
    run = serializers.CharField()
    unit = serializers.CharField()
    size = serializers.IntegerField()
    overlap = serializers.IntegerField()
    heldout_fraction = serializers.FloatField()
    seed = serializers.IntegerField()
    strata = serializers.ListField(child=serializers.DictField())
    allocation = serializers.CharField()
    created_at = serializers.DateTimeField()
    metric = serializers.CharField()
    label_set = serializers.DictField()
    guideline_version = serializers.IntegerField()


class CampaignListApi(APIView):
    """GET lists the campaigns; POST creates one (``create_campaign`` and the campaign form do the same)."""

    permission_classes = [IsEvalOwner]

    class CampaignInput(serializers.Serializer):
        run = serializers.CharField(help_text="run name or #id")
        evalset = serializers.CharField(required=False, help_text="NAME or NAME@VERSION, when run names repeat")
        name = serializers.CharField(max_length=100)
        unit = serializers.ChoiceField(choices=Campaign.Unit.values)
        size = serializers.IntegerField(min_value=1, max_value=2**31 - 1)
        heldout_fraction = serializers.FloatField(min_value=0.0, max_value=1.0, default=0.3)
        overlap = serializers.IntegerField(min_value=1, max_value=20, default=1)
        seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=7)
        guidance = serializers.CharField(required=False, allow_blank=True, default="", max_length=20000)
        judge_question = serializers.CharField(required=False, allow_blank=True, default="", max_length=500)
        annotators = serializers.ListField(child=serializers.CharField(), required=False, default=list)
        metric = serializers.CharField(default="faithfulness", max_length=100, help_text="the judge metric validated")
        scale = serializers.ChoiceField(choices=Campaign.Scale.values, default=Campaign.Scale.BINARY)
        scale_min = serializers.IntegerField(
            required=False, min_value=-1000, max_value=1000, help_text="ordinal: the scale's lowest point"
        )
        scale_max = serializers.IntegerField(
            required=False, min_value=-1000, max_value=1000, help_text="ordinal: the scale's highest point"
        )
        fail_at = serializers.FloatField(
            required=False, help_text="ordinal: scores at or below it are the failure class"
        )
        pass_word = serializers.CharField(required=False, max_length=40, help_text="binary: the pass word")
        fail_word = serializers.CharField(required=False, max_length=40, help_text="binary: the fail word")
        judge_pass_at = serializers.FloatField(required=False, help_text="binary on a score: the judge passes at it")
        allocation = serializers.ChoiceField(
            choices=list(ALLOCATIONS),
            default="floor",
            help_text="tuning items over slice x verdict: floor (the rare verdict gets a quarter) or neyman (where the "
            "judge is least reliable; each item records its inclusion probability; held-out items stay random)",
        )
        pass_disagreement = serializers.FloatField(
            required=False, min_value=0.0, max_value=1.0, help_text="neyman: share of the judge's passes people fail"
        )
        fail_disagreement = serializers.FloatField(
            required=False, min_value=0.0, max_value=1.0, help_text="neyman: share of the judge's fails people pass"
        )

    @extend_schema(
        responses=CampaignSummary(many=True),
        summary="Campaigns (eval owners)",
        operation_id="campaigns_list",
    )
    def get(self, request: Request) -> Response:
        return Response([campaign_summary(c) for c in campaigns_list()])

    @extend_schema(
        request=CampaignInput,
        responses={201: CampaignSummary},
        summary="Create a campaign validating one judge metric with its label set",
        operation_id="campaigns_create",
    )
    def post(self, request: Request) -> Response:
        data = self.CampaignInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        try:
            run = about_field("run", lambda: run_by_ref(values["run"], evalset=values.get("evalset")))
            labels = label_set(
                metric=values["metric"],
                scale=values["scale"],
                scale_min=values.get("scale_min"),
                scale_max=values.get("scale_max"),
                fail_at=values.get("fail_at"),
                pass_word=values.get("pass_word"),
                fail_word=values.get("fail_word"),
                judge_pass_at=values.get("judge_pass_at"),
            )
            campaign = campaign_create(
                run=run,
                name=values["name"],
                unit=values["unit"],
                size=values["size"],
                heldout_fraction=values["heldout_fraction"],
                overlap=values["overlap"],
                seed=values["seed"],
                judge_question=values["judge_question"] or None,
                guidance=values["guidance"],
                annotators=values["annotators"],
                user=request.user,
                labels=labels,
                **allocation_options(values),
            )
        except UserFacingError as error:
            return Response(refusal(error), status=status.HTTP_400_BAD_REQUEST)
        return Response(campaign_summary(campaign), status=status.HTTP_201_CREATED)


def guideline_dict(guideline: Guideline) -> dict[str, Any]:
    return {
        "version": guideline.version,
        "text": guideline.text,
        "created_at": guideline.created_at,
        "created_by": guideline.created_by.username if guideline.created_by else None,
    }


class GuidelineOutput(serializers.Serializer):
    """One version of a campaign's guideline (for the schema)."""

    version = serializers.IntegerField()
    text = serializers.CharField()
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(allow_null=True)


class GuidelineApi(APIView):
    """GET lists the guideline's versions, newest first; POST writes the next version (annotators see it from then
    on, their labels record it, and a certificate measured under an older version reads stale)."""

    permission_classes = [IsEvalOwner]

    class GuidelineInput(serializers.Serializer):
        text = serializers.CharField(allow_blank=True, max_length=20000, help_text="the guideline's new text")

    @extend_schema(
        responses=GuidelineOutput(many=True),
        summary="The guideline's versions, newest first",
    )
    def get(self, request: Request, name: str) -> Response:
        campaign = campaign_for_owner(request.user, name)
        versions = campaign.guidelines.select_related("created_by").order_by("-version")
        return Response([guideline_dict(g) for g in versions])

    @extend_schema(
        request=GuidelineInput,
        responses={201: GuidelineOutput},
        summary="Write the guideline's next version",
    )
    def post(self, request: Request, name: str) -> Response:
        campaign = campaign_for_owner(request.user, name)
        data = self.GuidelineInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            guideline = campaign_new_guideline(campaign=campaign, text=data.validated_data["text"], user=request.user)
        except UserFacingError as error:
            return Response(refusal(error), status=status.HTTP_400_BAD_REQUEST)
        return Response(guideline_dict(guideline), status=status.HTTP_201_CREATED)
