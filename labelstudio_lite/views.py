"""Project-level pages: the home page that routes each role to its work, and the error pages."""

from __future__ import annotations

import sys

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.template import loader
from django.views.decorators.http import require_GET

from labelstudio_lite.accounts.access import is_eval_owner

from .dashboard import annotator_campaigns, owner_home
from .first_steps import first_steps
from .outage import outage_response


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """An annotator's campaigns (Enter continues labelling); for an eval owner, what needs attention and,
    until they are all done, the first steps from an empty instance to a gate."""
    context = {"mine": annotator_campaigns(request.user)}
    if is_eval_owner(request.user):
        context["attention"] = owner_home()
        steps = first_steps()
        context["steps"] = None if steps.finished else steps
    return render(request, "home.html", context)


@login_not_required
@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, for the clients that ask for it whatever the page says (pages link the SVG one)."""
    response = FileResponse((settings.BASE_DIR / "static" / "favicon.ico").open("rb"), content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response


def _error_page(request: HttpRequest, exception: Exception | None, *, template: str, status: int) -> HttpResponse:
    """An error page in the site's layout, with the reason the code gave (it is written for people)."""
    reason = (
        exception.args[0] if exception is not None and exception.args and isinstance(exception.args[0], str) else ""
    )
    return render(request, template, {"reason": reason, "request_path": request.path}, status=status)


def _wants_json(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """404: JSON for the API (what its schema documents), the page in the site's layout otherwise."""
    if _wants_json(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return _error_page(request, exception, template="404.html", status=404)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    return _error_page(request, exception, template="403.html", status=403)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    return _error_page(request, exception, template="400.html", status=400)


def server_error(request: HttpRequest) -> HttpResponse:
    """500: JSON for the API; the site's layout when it can be drawn, plain words when even that fails; never a traceback.

    An outage (the database or the broker away) is a 503 with Retry-After instead, in the same two forms.
    """
    unavailable = outage_response(request, sys.exc_info()[1])
    if unavailable is not None:
        return unavailable
    if _wants_json(request):
        return JsonResponse({"detail": "Internal error; the server log has the details."}, status=500)
    try:
        return render(request, "500.html", {}, status=500)
    except Exception:  # the layout needs the database and the session: they may be what failed
        return HttpResponseServerError(loader.get_template("500_plain.html").render())
