from django.urls import path

import labelstudio_lite.rest  # noqa: F401 (registers the id path converter)

from . import api

urlpatterns = [
    path("jobs/<id:job_id>/", api.JobDetailApi.as_view(), name="api-job"),
    path("evalsets/", api.EvalSetListApi.as_view(), name="api-evalsets"),
    path("evalsets/import/", api.EvalSetImportApi.as_view(), name="api-evalset-import"),
    path("evalsets/<slug:name>/versions/<id:number>/questions/", api.QuestionListApi.as_view(), name="api-questions"),
    path("runs/", api.RunListApi.as_view(), name="api-runs"),
    path("runs/import/", api.RunImportApi.as_view(), name="api-run-import"),
    path("runs/<id:run_id>/", api.RunDetailApi.as_view(), name="api-run"),
    path("runs/<id:run_id>/rows/", api.RowListApi.as_view(), name="api-rows"),
    path("gate/", api.GateApi.as_view(), name="api-gate"),
    path("comparisons/<id:comparison_id>/", api.ComparisonDetailApi.as_view(), name="api-comparison"),
]
