from django.urls import path

import labelstudio_lite.rest  # noqa: F401 (registers the id path converter)

from . import api, api_bias, api_campaigns, api_exports

urlpatterns = [
    path("label/campaigns/", api.MyCampaignsApi.as_view(), name="api-my-campaigns"),
    path("label/<slug:name>/next/", api.NextItemApi.as_view(), name="api-next"),
    path("label/<slug:name>/labels/", api.MyLabelsApi.as_view(), name="api-my-labels"),
    path("label/<slug:name>/skip/", api.SkipApi.as_view(), name="api-skip"),
    path("campaigns/", api_campaigns.CampaignListApi.as_view(), name="api-campaigns"),
    path("campaign-plan/", api.CampaignPlanApi.as_view(), name="api-campaign-plan"),
    path("campaigns/<slug:name>/", api.CampaignDetailApi.as_view(), name="api-campaign"),
    path("campaigns/<slug:name>/guideline/", api_campaigns.GuidelineApi.as_view(), name="api-campaign-guideline"),
    path("campaigns/<slug:name>/labels/", api_exports.CampaignLabelsApi.as_view(), name="api-campaign-labels"),
    path(
        "campaigns/<slug:name>/labels/import/", api.CampaignLabelImportApi.as_view(), name="api-campaign-label-import"
    ),
    path("campaigns/<slug:name>/judge-report/", api.JudgeReportApi.as_view(), name="api-judge-report"),
    path(
        "campaigns/<slug:name>/judge-report/publish/",
        api_exports.JudgeReportPublishApi.as_view(),
        name="api-judge-report-publish",
    ),
    path("campaigns/<slug:name>/remeasure/", api.RemeasureApi.as_view(), name="api-remeasure"),
    path("campaigns/<slug:name>/exports/", api_exports.ExportListApi.as_view(), name="api-exports"),
    path("campaigns/<slug:name>/try-prompt/", api.TryPromptApi.as_view(), name="api-try-prompt"),
    path("campaigns/<slug:name>/bias/", api_bias.BiasBatteryApi.as_view(), name="api-bias"),
    path("campaigns/<slug:name>/bias/estimate/", api_bias.BiasEstimateApi.as_view(), name="api-bias-estimate"),
    path("bias-probes/", api_bias.BiasProbeApi.as_view(), name="api-bias-probes"),
    path("judge-configs/<id:config_id>/bias/", api_bias.JudgeBiasVerdictApi.as_view(), name="api-judge-bias"),
]
