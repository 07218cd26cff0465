from typing import Any

from django.http import HttpRequest

from .access import is_eval_owner


def roles(request: HttpRequest) -> dict[str, Any]:
    """Expose the viewer's role to templates (navigation only; views enforce access)."""
    return {"viewer_is_eval_owner": is_eval_owner(getattr(request, "user", None))}
