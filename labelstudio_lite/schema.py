"""The OpenAPI schema tells every answer an endpoint can give, errors included.

drf-spectacular documents the answers a view declares; the errors every endpoint shares are
added here once: 401 and 403 (authentication and role), 404 where the path names something,
400 where the request carries input, 429 when a client is throttled.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular import openapi
from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers

#: The pattern of text that holds no NUL character (no database stores one in text).
NO_NUL = "^[^\\x00]*$"


class ErrorOutput(serializers.Serializer):
    detail = serializers.CharField(help_text="What went wrong, and what to do about it.")


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's schema, with the shared error answers of every operation."""

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        errors: dict[str, Any] = {"401": ErrorOutput, "403": ErrorOutput, "429": ErrorOutput}
        if "{" in self.path:
            errors["404"] = ErrorOutput
        if self.method in ("POST", "PUT", "PATCH") or self._has_query_parameters():
            errors["400"] = OpenApiTypes.OBJECT  # {"field": ["message"]} or {"detail": "message"}
        for code, serializer in errors.items():
            if code not in responses:
                responses[code] = self._get_response_for_code(serializer, code, direction=direction)
                if code == "400":
                    responses[code]["description"] = (
                        "The input, field by field: {field: [message]}, or {detail: message}"
                    )
        return responses

    def _map_serializer_field(self, field: Any, direction: Any, bypass_extensions: bool = False) -> dict[str, Any]:
        """A text input field also says it refuses the NUL character (every DRF CharField does)."""
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if (
            direction == "request"
            and isinstance(field, serializers.CharField)
            and schema.get("type") == "string"
            and "pattern" not in schema
            and "format" not in schema
        ):
            schema["pattern"] = NO_NUL
        return schema

    def _has_query_parameters(self) -> bool:
        return any(parameter.get("in") == "query" for parameter in self._get_parameters())
