from django.urls import path

import labelstudio_lite.rest  # noqa: F401 (registers the id path converter)

from . import api, api_judges

urlpatterns = [
    path("jobs/<id:job_id>/", api.JobDetailApi.as_view(), name="api-job"),
    path("jobs/<id:job_id>/cancel/", api_judges.JobCancelApi.as_view(), name="api-job-cancel"),
    path("judge-configs/", api_judges.JudgeConfigListApi.as_view(), name="api-judge-configs"),
    path("judge-configs/<id:config_id>/", api_judges.JudgeConfigDetailApi.as_view(), name="api-judge-config"),
    path("runs/<id:run_id>/judge/", api_judges.JudgeRunApi.as_view(), name="api-judge-run"),
    path("runs/<id:run_id>/judge/estimate/", api_judges.JudgeEstimateApi.as_view(), name="api-judge-estimate"),
    path("rescore/", api_judges.RescoreApi.as_view(), name="api-rescore"),
    path("evalsets/", api.EvalSetListApi.as_view(), name="api-evalsets"),
    path("evalsets/import/", api.EvalSetImportApi.as_view(), name="api-evalset-import"),
    path("evalsets/<slug:name>/versions/<id:number>/questions/", api.QuestionListApi.as_view(), name="api-questions"),
    path("runs/", api.RunListApi.as_view(), name="api-runs"),
    path("runs/import/", api.RunImportApi.as_view(), name="api-run-import"),
    path("runs/<id:run_id>/", api.RunDetailApi.as_view(), name="api-run"),
    path("runs/<id:run_id>/rows/", api.RowListApi.as_view(), name="api-rows"),
    path("gate/", api.GateApi.as_view(), name="api-gate"),
    path("comparisons/<id:comparison_id>/", api.ComparisonDetailApi.as_view(), name="api-comparison"),
    path("comparisons/<id:comparison_id>/changed/", api.ChangedRowsApi.as_view(), name="api-comparison-changed"),
    path("plan/labels/", api.PlanLabelsApi.as_view(), name="api-plan-labels"),
    path("plan/questions/", api.PlanQuestionsApi.as_view(), name="api-plan-questions"),
]
