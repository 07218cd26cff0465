"""The API throttle (DRF's), whose rate follows the settings and whose refusals are logged.

A throttled client gets 429 with ``Retry-After`` and "Request was throttled. Expected available in
N seconds." The rate is ``API_THROTTLE_USER`` per user (token or session); a request without
credentials is refused (401) before any throttle, and logins are locked out by django-axes.
"""

from __future__ import annotations

import logging
from typing import Any

from rest_framework import throttling
from rest_framework.settings import api_settings

logger = logging.getLogger("labelstudio_lite.throttles")


class _Logged:
    scope: str

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)  # read now: tests and settings change it

    def throttle_failure(self) -> bool:
        request = getattr(self, "_request", None)
        logger.warning(
            "API throttled (%s, %s): %s %s",
            self.scope,
            getattr(self, "key", "?"),
            getattr(request, "method", "?"),
            getattr(request, "path", "?"),
        )
        return False

    def allow_request(self, request: Any, view: Any) -> bool:
        self._request = request
        return super().allow_request(request, view)  # type: ignore[misc]


class UserRateThrottle(_Logged, throttling.UserRateThrottle):
    pass
