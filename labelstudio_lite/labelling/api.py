"""Labelling API. Annotator endpoints return only what the labelling page shows (blind to the judge,
to scores and to other annotators' labels); campaign endpoints are for eval owners."""

from __future__ import annotations

from django.utils.decorators import method_decorator
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evalcore.api import JobOutput
from evalcore.api import _accepted as job_accepted
from evalcore.api import _save as save_api_upload
from evalcore.jobs.labelling_kinds import LabelImportParams, TryPromptParams, request_labels_import, request_try_prompt
from evalcore.selectors import run_by_ref
from evalcore.services.problems import UserFacingError
from evalcore.services.uploads import discard_upload
from labelstudio_lite.accounts.access import IsEvalOwner
from labelstudio_lite.middleware import retry_when_busy
from labelstudio_lite.rest import MAX_ID, JSONObjectField, StrictCharField, id_field
from labelstudio_lite.schema import ErrorOutput

from .access import campaign_for_labelling, campaign_for_owner, verdict_set_for
from .models import Campaign, Label
from .selectors import (
    annotator_agreement,
    annotator_share,
    blind_item,
    campaign_progress,
    campaigns_for_annotator,
    final_label_counts,
    own_label,
    own_labels,
    remeasurement_opened,
)
from .services.assignment import (
    AlreadyAnswered,
    LabellingError,
    LeaseExpired,
    current_guideline_version,
    next_item,
    skip_item,
    submit_label,
)
from .services.campaigns import plan_assumptions, plan_campaign
from .services.judge_report import judge_report
from .services.label_sources import LABEL_FORMATS, MATCHES
from .services.remeasure import remeasure, remeasurement_open


class ChunkOutput(serializers.Serializer):
    n = serializers.IntegerField()
    id = serializers.CharField()
    text = serializers.CharField()


class AnswerChoiceOutput(serializers.Serializer):
    value = serializers.CharField()
    word = serializers.CharField()


class BlindItemOutput(serializers.Serializer):
    item_id = serializers.IntegerField()
    question = serializers.CharField()
    context = ChunkOutput(many=True)
    answer = serializers.CharField()
    claim = serializers.CharField(allow_null=True)
    claim_number = serializers.IntegerField(allow_null=True)
    lease_expires_at = serializers.DateTimeField()
    question_asked = serializers.CharField()
    choices = AnswerChoiceOutput(many=True, help_text="The answers the campaign takes (send the value).")
    reference = serializers.CharField(
        required=False, help_text="The question's reference answer: only on campaigns validating correctness."
    )
    guideline_version = serializers.IntegerField(help_text="The guideline version the label is given under.")


class ShareOutput(serializers.Serializer):
    done = serializers.IntegerField()
    cant_tell = serializers.IntegerField()
    target = serializers.IntegerField()


VERDICTS = OpenApiParameter(
    "verdicts",
    {"type": "integer", "minimum": 1, "maximum": MAX_ID},
    description="the verdict set of another judge config (default: the run's own judge)",
)
REMEASURE_PARAMETERS = [
    OpenApiParameter(
        "verdicts",
        {"type": "integer", "minimum": 1, "maximum": MAX_ID},
        required=True,
        description="the verdict set of the new judge config",
    ),
    OpenApiParameter(
        "split",
        {"type": "string", "enum": ["heldout"], "default": "heldout"},
        description="only the held-out split: a judge tuned on the tuning split's disagreements would look better there",
    ),
]


def _share(campaign: Campaign, user) -> dict:
    share = annotator_share(campaign=campaign, user=user)
    return {"done": share.done, "cant_tell": share.cant_tell, "target": share.target}


class MyCampaignsApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses=inline_serializer(
            "MyCampaign",
            {
                "name": serializers.CharField(),
                "unit": serializers.CharField(),
                "question": serializers.CharField(),
                "guidance": serializers.CharField(),
                "share": ShareOutput(),
            },
            many=True,
        ),
        summary="Campaigns you are assigned to label",
    )
    def get(self, request: Request) -> Response:
        return Response(
            [
                {
                    "name": c.name,
                    "unit": c.unit,
                    "question": c.judge_question,
                    "guidance": c.guidance,
                    "share": _share(c, request.user),
                }
                for c in campaigns_for_annotator(request.user)
            ]
        )


@method_decorator(retry_when_busy, name="post")
class NextItemApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=None,
        responses={200: BlindItemOutput, 204: None},
        summary="Claim the next item to label (204 when your share is done)",
    )
    def post(self, request: Request, name: str) -> Response:
        campaign = campaign_for_labelling(request.user, name)
        served = next_item(campaign=campaign, user=request.user)
        if served is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        view = blind_item(served.item, shows=campaign.shows)  # next_item loads the item's row and question
        view.pop("answer_html", None)
        view.pop("claim_count", None)
        if view.pop("shows") != Campaign.Shows.REFERENCE:
            view.pop("reference")
        return Response(
            {
                **view,
                "lease_expires_at": served.lease.expires_at,
                "question_asked": campaign.judge_question,
                "choices": [{"value": c["value"], "word": c["word"]} for c in campaign.choices],
                "guideline_version": current_guideline_version(campaign),
            }
        )


class LabelInput(serializers.Serializer):
    item_id = id_field()
    value = StrictCharField(
        max_length=12,
        help_text="supported, unsupported or cant_tell; on an ordinal campaign a score of its scale, or cant_tell.",
    )
    rationale = StrictCharField(required=False, allow_blank=True, default="", max_length=5000)


IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "Any unique string (at most 64 characters) per answer. Sending the answer again with the same key "
        "(a retry after a timeout) returns the label already stored; an answer with another key to an item "
        "you already answered is a 409."
    ),
)


class OwnLabelOutput(serializers.ModelSerializer):
    question_id = serializers.CharField(source="item.row.question.qid")
    claim_index = serializers.IntegerField(source="item.claim_index", allow_null=True)

    class Meta:
        model = Label
        fields = [
            "id",
            "item_id",
            "question_id",
            "claim_index",
            "value",
            "rationale",
            "seconds",
            "created_at",
            "updated_at",
        ]


@method_decorator(retry_when_busy, name="post")
class MyLabelsApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses=OwnLabelOutput(many=True), summary="Your own labels in a campaign")
    def get(self, request: Request, name: str) -> Response:
        campaign = campaign_for_labelling(request.user, name)
        return Response(OwnLabelOutput(own_labels(campaign=campaign, user=request.user), many=True).data)

    @extend_schema(
        request=LabelInput,
        parameters=[IDEMPOTENCY_KEY],
        responses={201: OwnLabelOutput, 409: ErrorOutput},
        summary="Label an item handed to you (idempotent)",
        description=(
            "An answer after your lease ran out is still stored while the item has a free slot; it is a 409 "
            "only when someone else took the item meanwhile, or when you already answered it with another key."
        ),
    )
    def post(self, request: Request, name: str) -> Response:
        campaign = campaign_for_labelling(request.user, name)
        data = LabelInput(data=request.data)
        data.is_valid(raise_exception=True)
        key = request.headers.get("Idempotency-Key", "")
        if len(key) > 64:
            return Response({"Idempotency-Key": ["at most 64 characters"]}, status=status.HTTP_400_BAD_REQUEST)
        try:
            label = submit_label(campaign=campaign, user=request.user, source="api", key=key, **data.validated_data)
        except (LeaseExpired, AlreadyAnswered) as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        except LabellingError as error:
            return Response({"detail": str(error)}, status=status.HTTP_400_BAD_REQUEST)
        label = own_label(
            campaign=campaign, user=request.user, label_id=label.pk
        )  # one query for the output, not three
        return Response(OwnLabelOutput(label).data, status=status.HTTP_201_CREATED)


@method_decorator(retry_when_busy, name="post")
class SkipApi(APIView):
    permission_classes = [IsAuthenticated]

    class SkipInput(serializers.Serializer):
        item_id = id_field()

    @extend_schema(request=SkipInput, responses={204: None}, summary="Give a held item back")
    def post(self, request: Request, name: str) -> Response:
        campaign = campaign_for_labelling(request.user, name)
        data = self.SkipInput(data=request.data)
        data.is_valid(raise_exception=True)
        skip_item(campaign=campaign, user=request.user, item_id=data.validated_data["item_id"])
        return Response(status=status.HTTP_204_NO_CONTENT)


class CampaignPlanApi(APIView):
    """What a campaign with these settings would sample and measure: the campaign form's live plan, as JSON."""

    permission_classes = [IsEvalOwner]

    class PlanInput(serializers.Serializer):
        run = serializers.CharField(help_text="run name or #id")
        evalset = serializers.CharField(required=False, help_text="NAME or NAME@VERSION, when run names repeat")
        unit = serializers.ChoiceField(choices=Campaign.Unit.values)
        size = serializers.IntegerField(min_value=1)
        heldout_fraction = serializers.FloatField(min_value=0.0, max_value=1.0, default=0.3)
        overlap = serializers.IntegerField(min_value=1, max_value=20, default=1)
        seed = serializers.IntegerField(min_value=0, default=7)
        miss_rate = serializers.FloatField(
            min_value=0.0, max_value=0.99, required=False, help_text="default: the judge's last validation, or 0.25"
        )
        false_fail_rate = serializers.FloatField(min_value=0.0, max_value=0.99, required=False, help_text="0.05")
        target = serializers.FloatField(
            min_value=0.001, max_value=1.0, required=False, help_text="half-width wanted on the miss rate (0.05)"
        )

    @extend_schema(
        parameters=[PlanInput],
        responses=inline_serializer(
            "CampaignPlan",
            {
                "strata": serializers.ListField(),
                "warnings": serializers.ListField(),
                "precision": serializers.DictField(allow_null=True),
            },
        ),
        summary="Plan a campaign: the strata it would sample and the half-widths its judge report will show",
    )
    def get(self, request: Request) -> Response:
        data = self.PlanInput(data=request.query_params)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        try:
            run = run_by_ref(values["run"], evalset=values.get("evalset"))
            plan = plan_campaign(
                run=run,
                unit=values["unit"],
                size=values["size"],
                seed=values["seed"],
                heldout_fraction=values["heldout_fraction"],
                overlap=values["overlap"],
                **plan_assumptions(values),
            )
        except UserFacingError as error:
            return Response({"detail": str(error)}, status=status.HTTP_400_BAD_REQUEST)
        return Response({"run": run.name, **plan.as_dict()})


class CampaignDetailApi(APIView):
    permission_classes = [IsEvalOwner]

    @extend_schema(
        responses=inline_serializer(
            "CampaignDetail",
            {
                "name": serializers.CharField(),
                "run": serializers.CharField(),
                "unit": serializers.CharField(),
                "question": serializers.CharField(),
                "progress": serializers.DictField(),
                "agreement": serializers.DictField(),
                "final_labels": serializers.DictField(child=serializers.IntegerField()),
            },
        ),
        summary="Progress and annotator agreement",
    )
    def get(self, request: Request, name: str) -> Response:
        campaign = campaign_for_owner(request.user, name)
        return Response(
            {
                "name": campaign.name,
                "run": campaign.run.name,
                "unit": campaign.unit,
                "question": campaign.judge_question,
                "progress": campaign_progress(campaign).as_dict(),
                "agreement": annotator_agreement(campaign).as_dict(),
                "final_labels": final_label_counts(campaign),
            }
        )


class JudgeReportApi(APIView):
    permission_classes = [IsEvalOwner]

    @extend_schema(
        parameters=[VERDICTS],
        responses=inline_serializer(
            "JudgeReport",
            {
                "campaign": serializers.CharField(),
                "unit": serializers.CharField(),
                "verdict": serializers.DictField(),
                "overall": serializers.DictField(),
                "slices": serializers.ListField(child=serializers.DictField()),
                "warnings": serializers.ListField(child=serializers.CharField()),
            },
        ),
        summary="The judge error report (same numbers as the page)",
    )
    def get(self, request: Request, name: str) -> Response:
        campaign = campaign_for_owner(request.user, name)
        return Response(
            judge_report(
                campaign, verdict_set=verdict_set_for(campaign, request.query_params.get("verdicts"))
            ).as_dict()
        )


class RemeasureApi(APIView):
    """GET reads a re-measurement someone opened; POST opens it (recorded: tuning again afterwards spends the held-out split)."""

    permission_classes = [IsEvalOwner]

    def _result(self, request: Request, name: str, *, opening: bool) -> Response:
        campaign = campaign_for_owner(request.user, name)
        verdict_set = verdict_set_for(campaign, request.query_params.get("verdicts"))
        if verdict_set is None:
            return Response({"verdicts": ["give ?verdicts=ID, the verdicts of the new judge config"]}, status=400)
        try:
            result = remeasure(
                campaign=campaign, verdict_set=verdict_set, split=request.query_params.get("split", "heldout")
            )
            if opening:
                remeasurement_open(campaign=campaign, verdict_set=verdict_set, user=request.user)
        except UserFacingError as error:
            return Response({"detail": str(error)}, status=400)
        if not remeasurement_opened(verdict_set):
            return Response(
                {
                    "detail": "nobody has opened this re-measurement yet: POST to open it (recorded: tuning the judge "
                    "again afterwards spends the held-out split)"
                },
                status=409,
            )
        return Response(result.as_dict())

    @extend_schema(
        parameters=REMEASURE_PARAMETERS,
        responses={200: inline_serializer("Remeasurement", {"n": serializers.IntegerField()}), 409: ErrorOutput},
        summary="New judge vs old on the held-out split, once opened (a read)",
    )
    def get(self, request: Request, name: str) -> Response:
        return self._result(request, name, opening=False)

    @extend_schema(
        request=None,
        parameters=REMEASURE_PARAMETERS,
        responses={200: inline_serializer("RemeasurementOpened", {"n": serializers.IntegerField()})},
        summary="Open the re-measurement (recorded) and return it",
    )
    def post(self, request: Request, name: str) -> Response:
        return self._result(request, name, opening=True)


class TryPromptApi(APIView):
    permission_classes = [IsEvalOwner]

    class TryPromptInput(serializers.Serializer):
        base_config = serializers.IntegerField(
            min_value=1, max_value=2**63 - 1, help_text="the runnable config to start from"
        )
        name = serializers.SlugField(max_length=100, help_text="the new judge config's name")
        export = serializers.IntegerField(required=False, min_value=1, help_text="disagreement export version")
        export_campaign = serializers.SlugField(required=False, help_text="the export's campaign (default this one)")
        prompt = serializers.CharField(required=False, trim_whitespace=False, help_text="the edited verdict prompt")
        claims = serializers.ChoiceField(choices=["keep", "split"], default="keep")

    @extend_schema(
        request=TryPromptInput,
        responses={202: JobOutput},
        summary="Try a tuned prompt: a new judge config judges the held-out items, then the re-measurement opens (a job)",
    )
    def post(self, request: Request, name: str) -> Response:
        campaign = campaign_for_owner(request.user, name)
        data = self.TryPromptInput(data=request.data)
        data.is_valid(raise_exception=True)
        params = TryPromptParams(campaign=campaign.name, **data.validated_data)
        return job_accepted(request_try_prompt, params, request)


class CampaignLabelImportApi(APIView):
    """Import labels made elsewhere into a campaign (eval owners): the same job as the command and the page."""

    permission_classes = [IsEvalOwner]
    parser_classes = [MultiPartParser]

    class LabelImportInput(serializers.Serializer):
        file = serializers.FileField(help_text="our label lines, or a Label Studio, Argilla or Langfuse scores export")
        format = serializers.ChoiceField(choices=LABEL_FORMATS, required=False)
        label_field = serializers.CharField(required=False, allow_blank=True, max_length=200)
        value_map = JSONObjectField(required=False, help_text='JSON object: {"Supported": "supported", ...}')
        users = serializers.FileField(required=False, help_text="users table: id and username (or email, name)")
        match = serializers.ChoiceField(choices=MATCHES, default="auto")
        id_field = serializers.CharField(required=False, allow_blank=True, max_length=200)  # blank: not given

    @extend_schema(request=LabelImportInput, responses={202: JobOutput}, summary="Import labels made elsewhere (a job)")
    def post(self, request: Request, name: str) -> Response:
        campaign = campaign_for_owner(request.user, name)
        serializer = self.LabelImportInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        path = save_api_upload(data["file"], "file")
        try:
            users = save_api_upload(data["users"], "users") if data.get("users") else None
        except serializers.ValidationError:
            discard_upload(path)
            raise
        params = LabelImportParams(
            campaign=campaign.name,
            path=path,
            display_name=data["file"].name,
            format=data.get("format"),
            label_field=data.get("label_field") or None,
            value_map={str(k): str(v) for k, v in (data.get("value_map") or {}).items()},
            users_path=users,
            match=data["match"],
            id_field=data.get("id_field") or None,
        )
        return job_accepted(request_labels_import, params, request)
