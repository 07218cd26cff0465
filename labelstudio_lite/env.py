"""Read settings from environment variables, failing loudly on a value that cannot be right.

A misspelled or malformed setting must stop the app at start-up rather than silently fall back
to a default (healthchecks' ``envbool``/``envint`` pattern).
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def envbool(name: str, default: bool) -> bool:
    """Return a boolean environment variable: 1/true/yes/on or 0/false/no/off."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean: use 1/true/yes/on or 0/false/no/off")


def envint(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return an integer environment variable, at least ``minimum`` and at most ``maximum`` when given."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} must be at most {maximum}")
    return value


def envfloat(name: str, default: float) -> float:
    """Return a float environment variable."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None


def envlist(name: str, default: list[str]) -> list[str]:
    """Return a comma-separated list environment variable."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def envstr(name: str, default: str) -> str:
    return os.environ.get(name, default)


def envchoice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """Return an environment variable that must be one of ``choices``."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={raw!r} must be one of {', '.join(choices)}")
    return value


def proxy_ssl_header(name: str) -> tuple[str, str] | None:
    """``SECURE_PROXY_SSL_HEADER`` from ``X-Forwarded-Proto`` (its value then ``https``) or ``X-Forwarded-Proto: https``."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    header, _, value = raw.partition(":")
    header, value = header.strip(), value.strip() or "https"
    if not header or not all(c.isalnum() or c == "-" for c in header):
        raise ImproperlyConfigured(
            f"{name}={raw!r} must name a header, such as X-Forwarded-Proto or X-Forwarded-Proto: https"
        )
    return "HTTP_" + header.upper().replace("-", "_"), value
