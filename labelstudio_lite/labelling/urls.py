from django.urls import path

from .views import annotate, campaigns

app_name = "labelling"

urlpatterns = [
    path("label/", annotate.my_campaigns, name="mine"),
    path("label/<slug:name>/", annotate.label_page, name="label"),
    path("label/<slug:name>/answer/", annotate.answer, name="answer"),
    path("label/<slug:name>/recent/", annotate.recent, name="recent"),
    path("label/<slug:name>/labels/<int:label_id>/", annotate.edit_label, name="edit"),
    path("campaigns/", campaigns.campaign_list, name="campaigns"),
    path("campaigns/preview/", campaigns.campaign_preview, name="preview"),
    path("campaigns/<slug:name>/", campaigns.campaign_overview, name="campaign"),
    path("campaigns/<slug:name>/annotators/", campaigns.campaign_annotators, name="annotators"),
    path("campaigns/<slug:name>/adjudicate/", campaigns.adjudication, name="adjudicate"),
    path("campaigns/<slug:name>/labels.<str:fmt>", campaigns.export, name="export"),
    path("campaigns/<slug:name>/import/", campaigns.import_labels_view, name="import"),
]
