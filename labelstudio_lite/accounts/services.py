"""Creating users outside the demo: one service for the command line (and anything else that needs it)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from evalcore.services.problems import UserFacingError

#: The role names operators type, and the role each one stores.
ROLES = {"owner": "eval_owner", "annotator": "annotator"}


@dataclass(frozen=True)
class UserSaved:
    user: object
    created: bool
    role_changed: bool
    password_set: bool


def user_save(*, username: str, role: str, password: str | None = None, email: str = "") -> UserSaved:
    """Create user ``username`` with ``role`` (``owner`` or ``annotator``), or bring an existing one to that role.

    Idempotent: run twice, the second run changes nothing. ``password`` (checked by the password validators)
    is set when given; an existing user's password is otherwise left alone. Refusals are :class:`UserFacingError`.
    """
    if role not in ROLES:
        raise UserFacingError(f"role must be one of {', '.join(ROLES)}, got {role!r}", field="role")
    User = get_user_model()
    candidate = User(username=username, email=email, role=ROLES[role])
    try:
        candidate.clean_fields(exclude=["password"])
    except ValidationError as error:
        problems = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in error.message_dict.items())
        raise UserFacingError(f"user {username!r} cannot be saved: {problems}") from None
    if password is not None:
        try:
            validate_password(password, user=candidate)
        except ValidationError as error:
            raise UserFacingError(f"password refused: {' '.join(error.messages)}", field="password") from None
    try:
        with transaction.atomic():
            user, created = User.objects.select_for_update().get_or_create(
                username=username, defaults={"role": ROLES[role], "email": email}
            )
            role_changed = not created and user.role != ROLES[role]
            if role_changed:
                user.role = ROLES[role]
            if password is not None:
                user.set_password(password)
            if role_changed or password is not None:
                user.save()
    except IntegrityError:  # created by someone else at the same moment: the second run is the idempotent one
        return user_save(username=username, role=role, password=password, email=email)
    return UserSaved(user, created, role_changed, password is not None)
