"""The planner page for eval owners: how many labels a campaign needs and how many paired questions a comparison
needs, before there is any data. A read: both answers come from the query string (GET), live with htmx."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from labelstudio_lite.accounts.access import eval_owner_required

from ..forms import PlanLabelsForm, PlanQuestionsForm
from ..services.planning import plan_labels, plan_questions
from ..services.problems import UserFacingError

PARTIALS = ("labels", "questions")


def _bound(form_class: type[forms.Form], request: HttpRequest, prefix: str) -> forms.Form:
    """The form bound to the query string, or to its initial values when the page is first opened."""
    if any(key.startswith(f"{prefix}-") for key in request.GET):
        return form_class(request.GET, prefix=prefix)
    initial = {f"{prefix}-{name}": field.initial for name, field in form_class.base_fields.items()}
    return form_class({k: v for k, v in initial.items() if v is not None}, prefix=prefix)


def _answer(form: forms.Form, plan: Any) -> tuple[Any, str | None]:
    if not form.is_valid():
        return None, "Fix the fields marked above."
    try:
        return plan(**{k: v for k, v in form.cleaned_data.items() if v is not None}), None
    except UserFacingError as error:
        return None, str(error)


@require_GET
@eval_owner_required
def plan_page(request: HttpRequest) -> HttpResponse:
    labels_form = _bound(PlanLabelsForm, request, "labels")
    questions_form = _bound(PlanQuestionsForm, request, "questions")
    labels, labels_error = _answer(labels_form, plan_labels)
    questions, questions_error = _answer(questions_form, plan_questions)
    context = {
        "labels_form": labels_form,
        "questions_form": questions_form,
        "labels": labels,
        "labels_error": labels_error,
        "questions": questions,
        "questions_error": questions_error,
    }
    partial = request.GET.get("partial")
    if request.htmx and partial in PARTIALS:
        return render(request, f"evalcore/plan.html#{partial}", context)
    return render(request, "evalcore/plan.html", context)
