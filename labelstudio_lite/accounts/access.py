"""Access helpers used by every view and endpoint: 403 for the wrong role, 404 for outsiders."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from rest_framework.permissions import BasePermission


def is_eval_owner(user: Any) -> bool:
    return bool(getattr(user, "is_authenticated", False) and getattr(user, "is_eval_owner", False))


def eval_owner_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Allow only eval owners; an annotator gets 403 (login is enforced by the middleware)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_eval_owner(request.user):
            raise PermissionDenied("This page is for eval owners.")
        return view(request, *args, **kwargs)

    return wrapper


class IsEvalOwner(BasePermission):
    """DRF permission: authenticated eval owners only."""

    message = "This endpoint is for eval owners."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_eval_owner(request.user)
