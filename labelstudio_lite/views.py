"""Project-level pages: the home page that routes each role to its work, and the error pages."""

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.defaults import page_not_found
from django.views.defaults import server_error as django_server_error


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html", {})


def _wants_json(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """404: JSON for the API (what its schema documents), the page otherwise."""
    if _wants_json(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """500: JSON for the API, the page otherwise; never a traceback (the log has it)."""
    if _wants_json(request):
        return JsonResponse({"detail": "Internal error; the server log has the details."}, status=500)
    return django_server_error(request)
