from django.urls import path

from .views import comparisons, evalsets, jobs, judges, planning, runs

app_name = "evalcore"

urlpatterns = [
    path("evalsets/", evalsets.evalset_list, name="evalsets"),
    path("evalsets/<slug:name>/v<int:number>/", evalsets.version_detail, name="version"),
    path("runs/", runs.run_list, name="runs"),
    path("runs/<int:run_id>/", runs.run_detail, name="run"),
    path("runs/<int:run_id>/rows/", runs.run_rows_page, name="rows"),
    path("runs/<int:run_id>/rows/<int:row_id>/", runs.row_detail, name="row"),
    path("compare/", comparisons.compare, name="compare"),
    path("comparisons/<int:comparison_id>/", comparisons.comparison_detail, name="comparison"),
    path("comparisons/<int:comparison_id>/changed/", comparisons.changed_rows_page, name="changed-rows"),
    path("plan/", planning.plan_page, name="plan"),
    path("jobs/", jobs.job_list, name="jobs"),
    path("jobs/<int:job_id>/", jobs.job_detail, name="job"),
    path("jobs/<int:job_id>/cancel/", judges.cancel_job, name="job-cancel"),
    path("judges/", judges.judge_list, name="judges"),
    path("judges/<int:config_id>/", judges.judge_detail, name="judge"),
    path("runs/<int:run_id>/judge/", judges.judge_run_page, name="judge-run"),
    path("compare/rescore/", judges.rescore, name="rescore"),
]
