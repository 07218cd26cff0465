"""Every page requires login, except the login page itself and the token-authenticated API."""

from django.contrib.auth.middleware import LoginRequiredMiddleware as DjangoLoginRequiredMiddleware


class LoginRequiredMiddleware(DjangoLoginRequiredMiddleware):
    """Django's login-required middleware, leaving ``/api/`` to DRF.

    API views authenticate by token or session inside DRF and answer 401/403 themselves
    (``IsAuthenticated`` is the default permission); a redirect to the login page would be
    wrong for a script.
    """

    def process_view(self, request, view_func, view_args, view_kwargs):  # type: ignore[no-untyped-def]
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
