"""What every API endpoint shares: reading a JSON body within the input limits, JSON object fields, pagination.

DRF's own JSON parser lets a deeply nested body reach Python's recursion limit (a server error)
and reads ``1e999`` as infinity; this one refuses both with a 400 that says what was wrong.
"""

from __future__ import annotations

import codecs
from typing import Any

from django.conf import settings
from django.urls import register_converter
from drf_spectacular.utils import extend_schema_field
from rest_framework import parsers, serializers
from rest_framework.exceptions import ParseError
from rest_framework.pagination import LimitOffsetPagination

from evalcore.services.fields import FieldError, check_depth, json_safe, parse_json, parse_json_object


class JSONParser(parsers.JSONParser):
    """Parse a JSON body: finite numbers only, nested at most ``IMPORT_MAX_DEPTH`` levels."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = codecs.getreader(encoding)(stream).read()
        except (UnicodeDecodeError, ValueError) as error:
            raise ParseError(f"JSON parse error: the body is not {encoding} text ({error})") from None
        try:
            return parse_json(text, finite=True)
        except FieldError as error:
            raise ParseError(f"JSON parse error: the body {error.message}") from None


@extend_schema_field({"type": "object", "additionalProperties": True})
class JSONObjectField(serializers.JSONField):
    """A JSON object (a judge or system config): given as JSON text in a form field, or as an object in a JSON body."""

    default_error_messages = {"not_an_object": "must be a JSON object {...}"}

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        try:
            if isinstance(data, (str, bytes)):
                text = data.decode() if isinstance(data, bytes) else data
                return parse_json_object(text, self.field_name or "value")
            if not isinstance(data, dict):
                self.fail("not_an_object")
            check_depth(data)
            json_safe(data, self.field_name or "")
        except FieldError as error:
            raise serializers.ValidationError(error.message) from None
        except UnicodeDecodeError:
            raise serializers.ValidationError("is not UTF-8 text") from None
        return data


class Pagination(LimitOffsetPagination):
    """Limit and offset pagination that refuses a malformed ``limit`` or ``offset`` (400) instead of ignoring it."""

    default_limit = 100
    max_limit = 1000
    max_offset = 2**31 - 1

    def get_limit(self, request: Any) -> int:
        return self._number(request, self.limit_query_param, 1, self.max_limit, self.default_limit)

    def get_offset(self, request: Any) -> int:
        return self._number(request, self.offset_query_param, 0, self.max_offset, 0)

    def _number(self, request: Any, name: str, low: int, high: int, default: int) -> int:
        raw = request.query_params.get(name)
        if raw is None or raw == "":
            return default
        if not raw.isascii() or not raw.isdigit() or not low <= int(raw) <= high:
            raise serializers.ValidationError(
                {name: [f"must be a whole number from {low} to {high}, got {raw[:40]!r}"]}
            )
        return int(raw)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        bounds = {
            self.limit_query_param: {"minimum": 1, "maximum": self.max_limit, "default": self.default_limit},
            self.offset_query_param: {"minimum": 0, "maximum": self.max_offset, "default": 0},
        }
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"].update(bounds.get(parameter["name"], {}))
        return parameters


class StrictBooleanField(serializers.BooleanField):
    """A boolean given as JSON ``true``/``false`` or, in a form, the text ``true``/``false``: not 1, "yes" or "on"."""

    default_error_messages = {"invalid": "must be true or false"}

    def to_internal_value(self, data: Any) -> bool:
        if isinstance(data, bool):
            return data
        if isinstance(data, str) and data in ("true", "false"):
            return data == "true"
        self.fail("invalid")


class StrictCharField(serializers.CharField):
    """Text given as text: a number or a boolean is refused, not turned into "0" or "True" (DRF's CharField would)."""

    default_error_messages = {"invalid": "must be text"}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


#: The largest id a database row can have (a 64-bit signed integer): a larger one is refused, not looked up.
MAX_ID = 2**63 - 1


def id_field(**kwargs: Any) -> serializers.IntegerField:
    """An integer field for a row's id: from 1 to :data:`MAX_ID`."""
    return serializers.IntegerField(min_value=1, max_value=MAX_ID, **kwargs)


class IdConverter:
    """A path segment holding a row's id: 1 to 18 digits, so every id a database can hold and none it cannot
    (a longer number is a 404, never an overflow in the database driver)."""

    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(IdConverter, "id")
