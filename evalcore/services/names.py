"""What people type to name things: one rule for every name, one reader for ``NAME@VERSION``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .problems import UserFacingError

NAME_RULE = "letters, digits, - and _"
_NAME = re.compile(r"^[-a-zA-Z0-9_]+\Z")


class InvalidName(UserFacingError):
    """A name breaks the naming rule; the message says which name and the rule."""


class InvalidReference(UserFacingError):
    """A reference to an eval set version is not ``NAME`` or ``NAME@VERSION``."""


def check_name(name: str, *, what: str) -> str:
    """Return ``name`` if it follows the naming rule (the URL-safe slug rule), else raise :class:`InvalidName`.

    ``what`` names the thing in the message: ``check_name("a b", what="run")`` says
    "run name 'a b' may use only letters, digits, - and _".
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidName(f"{what} name {name!r} may use only {NAME_RULE}")
    return name


@dataclass(frozen=True)
class VersionRef:
    """An eval set version as people name it: ``support-qa`` (its latest version) or ``support-qa@3``."""

    name: str
    number: int | None = None

    def __str__(self) -> str:
        return self.name if self.number is None else f"{self.name}@{self.number}"


def parse_version_ref(ref: str) -> VersionRef:
    """Read ``NAME`` or ``NAME@VERSION``; raise :class:`InvalidReference` for anything else."""
    name, sep, number = (ref or "").strip().partition("@")
    if not name or (sep and not (number.isascii() and number.isdigit())):
        raise InvalidReference(f"eval set reference {ref!r} must be NAME or NAME@VERSION (for example support-qa@2)")
    return VersionRef(name, int(number) if sep else None)
