"""Exports API (eval owners): every label of a campaign (our rows, CSV or Label Studio's import tasks), the
disagreement exports, and the portable judge validation report. Each is recorded as an export of the
campaign (held-out items that leave show in the judge report), through the same services as the page and
the commands."""

from __future__ import annotations

import json
from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evalcore.services.problems import UserFacingError
from labelstudio_lite.accounts.access import IsEvalOwner
from labelstudio_lite.rest import StrictBooleanField, id_field

from .access import campaign_for_owner
from .selectors import NotFound, campaign_exports, verdict_set_asked
from .services.exports import DISAGREEMENT_FORMATS, LABEL_FORMATS, disagreements_export, labels_export
from .services.label_formats import label_studio_config
from .services.published_report import PUBLISH_FORMATS, judge_report_publish


class CampaignLabelsApi(APIView):
    permission_classes = [IsEvalOwner]

    class LabelExportInput(serializers.Serializer):
        format = serializers.ChoiceField(
            choices=LABEL_FORMATS,
            required=False,
            default="jsonl",
            help_text="jsonl (labels as rows), csv (the file as content) or label-studio (Label Studio's import tasks)",
        )

    @extend_schema(
        request={"application/json": LabelExportInput},  # optional: an empty POST is a jsonl export
        responses={
            201: inline_serializer(
                "LabelExport",
                {
                    "version": serializers.IntegerField(),
                    "items": serializers.IntegerField(),
                    "heldout_items": serializers.IntegerField(),
                    "format": serializers.CharField(),
                    "download": serializers.CharField(),
                    "labels": serializers.ListField(required=False, help_text="jsonl: one row a label"),
                    "content": serializers.CharField(required=False, help_text="csv: the file"),
                    "tasks": serializers.ListField(required=False, help_text="label-studio: the tasks to import"),
                    "label_config": serializers.CharField(
                        required=False, help_text="label-studio: the project's config"
                    ),
                },
            )
        },
        summary="Export every label, held-out items included (eval owners): recorded as a label export, so a POST",
    )
    def post(self, request: Request, name: str) -> Response:
        campaign = campaign_for_owner(request.user, name)
        data = self.LabelExportInput(data=request.data)
        data.is_valid(raise_exception=True)
        fmt = data.validated_data["format"]
        record = labels_export(campaign=campaign, fmt=fmt, user=request.user)
        body: dict[str, Any] = {
            "version": record.version,
            "items": len(record.item_ids),
            "heldout_items": record.heldout_items,
            "format": fmt,
            "download": f"/campaigns/{campaign.name}/exports/{record.version}/",
        }
        if fmt == "jsonl":
            body["labels"] = [json.loads(line) for line in record.content.splitlines()]
        elif fmt == "label-studio":
            body["tasks"] = json.loads(record.content)
            body["label_config"] = label_studio_config(campaign)
        else:
            body["content"] = record.content
        return Response(body, status=201)


class ExportListApi(APIView):
    permission_classes = [IsEvalOwner]

    class ExportInput(serializers.Serializer):
        format = serializers.ChoiceField(choices=DISAGREEMENT_FORMATS)
        limit = serializers.IntegerField(required=False, min_value=1, max_value=1_000_000)
        balanced = StrictBooleanField(required=False, default=False)
        seed = serializers.IntegerField(required=False, default=7, min_value=0, max_value=2**32 - 1)
        verdicts = id_field(required=False, help_text="the verdict set of another judge config (default: the run's)")

    @extend_schema(
        responses=inline_serializer(
            "ExportRecordOut",
            {
                "version": serializers.IntegerField(),
                "kind": serializers.CharField(),
                "format": serializers.CharField(),
                "items": serializers.IntegerField(),
                "heldout_items": serializers.IntegerField(),
                "options": serializers.DictField(),
                "created_by": serializers.CharField(allow_null=True),
                "created_at": serializers.DateTimeField(),
                "download": serializers.CharField(),
            },
            many=True,
        ),
        summary="Exports of a campaign",
    )
    def get(self, request: Request, name: str) -> Response:
        campaign = campaign_for_owner(request.user, name)
        return Response(
            [
                {
                    "version": e.version,
                    "kind": e.kind,
                    "format": e.fmt,
                    "items": len(e.item_ids),
                    "heldout_items": e.heldout_items,
                    "options": e.options,
                    "created_by": e.created_by.username if e.created_by else None,
                    "created_at": e.created_at,
                    "download": f"/campaigns/{campaign.name}/exports/{e.version}/",
                }
                for e in campaign_exports(campaign)
            ]
        )

    @extend_schema(
        request=ExportInput,
        responses={
            201: inline_serializer(
                "ExportCreated",
                {
                    "version": serializers.IntegerField(),
                    "items": serializers.IntegerField(),
                    "options": serializers.DictField(),
                    "content": serializers.CharField(),
                },
            )
        },
        summary="Export the tuning split's disagreements (recorded and versioned)",
    )
    def post(self, request: Request, name: str) -> Response:
        campaign = campaign_for_owner(request.user, name)
        data = self.ExportInput(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        try:
            verdict_set = verdict_set_asked(campaign, d.get("verdicts"))  # not silently the run's judge instead
        except NotFound as error:
            return Response({"verdicts": [str(error)]}, status=400)
        try:
            record = disagreements_export(
                campaign=campaign,
                fmt=d["format"],
                limit=d.get("limit"),
                balanced=d["balanced"],
                seed=d["seed"],
                verdict_set=verdict_set,
                user=request.user,
            )
        except UserFacingError as error:
            return Response({"detail": str(error)}, status=400)
        return Response(
            {
                "version": record.version,
                "items": len(record.item_ids),
                "options": record.options,
                "content": record.content,
            },
            status=201,
        )


class JudgeReportPublishApi(APIView):
    permission_classes = [IsEvalOwner]

    class PublishInput(serializers.Serializer):
        format = serializers.ChoiceField(
            choices=PUBLISH_FORMATS, help_text="json (the document) or html (one self-contained page)"
        )
        verdicts = id_field(required=False, help_text="the verdict set of another judge config (default: the run's)")

    @extend_schema(
        request={"application/json": PublishInput},
        responses={
            201: inline_serializer(
                "PublishedReport",
                {
                    "version": serializers.IntegerField(),
                    "format": serializers.CharField(),
                    "items": serializers.IntegerField(),
                    "heldout_items": serializers.IntegerField(),
                    "download": serializers.CharField(),
                    "document": serializers.DictField(required=False, help_text="json: the report and its labels"),
                    "content": serializers.CharField(required=False, help_text="html: the page"),
                },
            )
        },
        summary="Publish the judge report with the labels behind it (recorded as an export: it holds held-out labels)",
    )
    def post(self, request: Request, name: str) -> Response:
        campaign = campaign_for_owner(request.user, name)
        data = self.PublishInput(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        try:
            verdict_set = verdict_set_asked(campaign, d.get("verdicts"))
        except NotFound as error:
            return Response({"verdicts": [str(error)]}, status=400)
        record = judge_report_publish(campaign=campaign, fmt=d["format"], verdict_set=verdict_set, user=request.user)
        body: dict[str, Any] = {
            "version": record.version,
            "format": record.fmt,
            "items": len(record.item_ids),
            "heldout_items": record.heldout_items,
            "download": f"/campaigns/{campaign.name}/exports/{record.version}/",
        }
        if record.fmt == "json":
            body["document"] = json.loads(record.content)
        else:
            body["content"] = record.content
        return Response(body, status=201)
