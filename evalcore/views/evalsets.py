from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from labelstudio_lite.accounts.access import eval_owner_required

from ..forms import EvalSetImportForm
from ..jobs.kinds import IMPORT_EVALSET, EvalSetImportParams, request_evalset_import
from ..models import EvalSetVersion, Job
from ..selectors import evalsets_with_versions, version_runs
from ..services.uploads import save_upload
from .jobs import job_form_page, register_job_form, retried_job, values_of

register_job_form(IMPORT_EVALSET, lambda job: reverse("evalcore:evalsets"))


@require_http_methods(["GET", "POST"])
@eval_owner_required
def evalset_list(request: HttpRequest) -> HttpResponse:
    retry = retried_job(request, IMPORT_EVALSET)
    initial = values_of(retry, EvalSetImportForm, extend=lambda params: params.get("mode") == "extend")
    form = EvalSetImportForm(request.POST or None, request.FILES or None, initial=initial)

    def start(data: dict) -> Job:
        return request_evalset_import(
            params=EvalSetImportParams(
                path=str(save_upload(data["file"])),
                name=data["name"],
                format=data["format"] or None,
                display_name=data["file"].name,
                mode="extend" if data["extend"] else "replace",
                topics_path=str(save_upload(data["topics"])) if data.get("topics") else None,
                description=data["description"],
            ),
            user=request.user,
        )

    return job_form_page(
        request,
        form,
        start=start,
        template="evalcore/evalsets.html",
        error_field="file",
        context=lambda: {"evalsets": evalsets_with_versions(), "retry": retry},
    )


@require_GET
@eval_owner_required
def version_detail(request: HttpRequest, name: str, number: int) -> HttpResponse:
    version = get_object_or_404(
        EvalSetVersion.objects.select_related("eval_set", "parent"), eval_set__name=name, number=number
    )
    qtype = request.GET.get("type")
    questions = version.questions.order_by("qid")
    if qtype is not None:
        questions = questions.filter(qtype=qtype)
    page = Paginator(questions, 50).get_page(request.GET.get("page"))
    types = version.questions.order_by().values_list("qtype", flat=True).distinct()
    context = {
        "version": version,
        "page": page,
        "types": sorted(types),
        "qtype": qtype,
        "runs": version_runs(version),
        "children": version.children.all(),
    }
    template = "evalcore/version.html#questions" if request.htmx else "evalcore/version.html"
    return render(request, template, context)
