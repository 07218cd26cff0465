from django.urls import path

from .views import annotate, bias, campaigns, reports

app_name = "labelling"

urlpatterns = [
    path("label/", annotate.my_campaigns, name="mine"),
    path("label/<slug:name>/", annotate.label_page, name="label"),
    path("label/<slug:name>/next/", annotate.take_next, name="next"),
    path("label/<slug:name>/answer/", annotate.answer, name="answer"),
    path("label/<slug:name>/leave/", annotate.leave, name="leave"),
    path("label/<slug:name>/recent/", annotate.recent, name="recent"),
    path("label/<slug:name>/labels/<int:label_id>/", annotate.edit_label, name="edit"),
    path("campaigns/", campaigns.campaign_list, name="campaigns"),
    path("campaigns/preview/", campaigns.campaign_preview, name="preview"),
    path("campaigns/<slug:name>/", campaigns.campaign_overview, name="campaign"),
    path("campaigns/<slug:name>/annotators/", campaigns.campaign_annotators, name="annotators"),
    path("campaigns/<slug:name>/guideline/", campaigns.campaign_guideline, name="guideline"),
    path("campaigns/<slug:name>/adjudicate/", campaigns.adjudication, name="adjudicate"),
    path("campaigns/<slug:name>/labels.<str:fmt>", campaigns.export, name="export"),
    path("campaigns/<slug:name>/import/", campaigns.import_labels_view, name="import"),
    path("campaigns/<slug:name>/report/", reports.report_page, name="report"),
    path("campaigns/<slug:name>/report.<str:fmt>", reports.report_publish, name="report-publish"),
    path("campaigns/<slug:name>/remeasure/", reports.remeasure_page, name="remeasure"),
    path("campaigns/<slug:name>/exports/", reports.export_create, name="export-create"),
    path("campaigns/<slug:name>/exports/<int:version>/", reports.export_download, name="export-download"),
    path("campaigns/<slug:name>/verdicts/", reports.verdicts_upload, name="verdicts"),
    path("campaigns/<slug:name>/fresh-heldout/", reports.fresh_heldout, name="fresh-heldout"),
    path("campaigns/<slug:name>/try-prompt/", reports.try_prompt, name="try-prompt"),
    path("campaigns/<slug:name>/bias/", bias.bias_page, name="bias"),
    path("campaigns/<slug:name>/bias/probes/", bias.bias_probe_add, name="bias-probe-add"),
]
