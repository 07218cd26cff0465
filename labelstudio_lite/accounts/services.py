"""People and access: every door (the People page, the invitation link, ``create_user``) calls these.

* :func:`user_save` creates a user with a role, or brings an existing one to it (idempotent; the
  command line's ``create_user``);
* :func:`user_invite` creates a new user who gets in by a one-time link or a generated password,
  either shown once;
* :func:`access_link_create` makes a one-time link (an invitation, or a password reset that stops the
  old password at once); :func:`access_link_use` sets the password through it, once;
* :func:`password_reset` resets by link or by a generated password; :func:`user_set_active`
  deactivates (or brings back) a person; nobody can lock out themselves or the last eval owner.

Refusals are :class:`UserFacingError` with a message that says what to do.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from evalcore.services.problems import UserFacingError

from .models import AccessLink, User, secret_digest

#: The role names operators type, and the role each one stores.
ROLES = {"owner": "eval_owner", "annotator": "annotator"}
#: How a new or reset person gets in: a one-time link they open, or a password the owner passes on.
ACCESS = ("link", "password")


class AccessError(UserFacingError):
    pass


@dataclass(frozen=True)
class UserSaved:
    user: Any
    created: bool
    role_changed: bool
    password_set: bool
    #: the password generated for a new user (``generate_password``): shown once, never stored in clear
    password: str | None = None


@dataclass(frozen=True)
class NewLink:
    """A one-time link just made: ``path`` holds its secret and is shown once."""

    link: AccessLink
    token: str

    @property
    def path(self) -> str:
        return f"/accounts/link/{self.token}/"


@dataclass(frozen=True)
class Access:
    """How a person invited or reset gets in: exactly one of a one-time link or a generated password."""

    user: Any
    link: NewLink | None = None
    password: str | None = None


def generated_password() -> str:
    """A password for a person to pass on once (16 URL-safe characters, about 96 bits)."""
    return secrets.token_urlsafe(12)


def _check_role(role: str) -> str:
    if role not in ROLES:
        raise AccessError(f"role must be one of {', '.join(ROLES)}, got {role!r}", field="role")
    return ROLES[role]


def _check_password(password: str, user: Any) -> None:
    try:
        validate_password(password, user=user)
    except ValidationError as error:
        raise AccessError(f"password refused: {' '.join(error.messages)}", field="password") from None


def _check_new(username: str, email: str, role: str) -> None:
    candidate = get_user_model()(username=username, email=email, role=role)
    try:
        candidate.clean_fields(exclude=["password"])
    except ValidationError as error:
        problems = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in error.message_dict.items())
        raise AccessError(f"user {username!r} cannot be saved: {problems}", field="username") from None


def user_save(
    *,
    username: str,
    role: str,
    password: str | None = None,
    email: str = "",
    generate_password: bool = False,
    must_be_new: bool = False,
) -> UserSaved:
    """Create user ``username`` with ``role`` (``owner`` or ``annotator``), or bring an existing one to that role.

    Idempotent: run twice, the second run changes nothing. ``password`` (checked by the password
    validators) is set when given; an existing user's password is otherwise left alone. A new user
    without one gets a generated password with ``generate_password`` (returned once), else none
    that works (an invitation link sets it). ``must_be_new`` refuses an existing username.
    """
    stored_role = _check_role(role)
    _check_new(username, email, stored_role)
    if password is not None:
        _check_password(password, get_user_model()(username=username, email=email))
    User = get_user_model()
    try:
        with transaction.atomic():
            user, created = User.objects.select_for_update().get_or_create(
                username=username, defaults={"role": stored_role, "email": email}
            )
            if must_be_new and not created:
                raise AccessError(
                    f"there is already a user named {username!r}: choose another name, or reset their password",
                    field="username",
                )
            generated = generated_password() if created and password is None and generate_password else None
            role_changed = not created and user.role != stored_role
            if role_changed:
                user.role = stored_role
            if password is not None or generated is not None:
                user.set_password(password if password is not None else generated)
            elif created:
                user.set_unusable_password()
            if role_changed or created or password is not None:
                user.save()
    except IntegrityError:  # created by someone else at the same moment: the second run is the idempotent one
        return user_save(
            username=username,
            role=role,
            password=password,
            email=email,
            must_be_new=must_be_new,
            generate_password=False,
        )
    return UserSaved(user, created, role_changed, password is not None or generated is not None, generated)


def access_link_create(*, user: Any, purpose: str, by: Any = None) -> NewLink:
    """Make a one-time link for ``user`` (valid ``ACCESS_LINK_HOURS``); it replaces any link they had open.

    A reset link also stops the old password at once: until the link is used, nobody gets in as them.
    """
    if purpose not in AccessLink.Purpose.values:
        raise AccessError(f"a link is for one of {', '.join(AccessLink.Purpose.values)}, got {purpose!r}")
    token = secrets.token_urlsafe(32)
    now = timezone.now()
    with transaction.atomic():
        AccessLink.objects.filter(user=user, used_at__isnull=True, revoked_at__isnull=True).update(revoked_at=now)
        link = AccessLink.objects.create(
            user=user,
            purpose=purpose,
            digest=secret_digest(token),
            created_by=by if getattr(by, "pk", None) else None,
            expires_at=now + timedelta(hours=settings.ACCESS_LINK_HOURS),
        )
        if purpose == AccessLink.Purpose.RESET:
            user.set_unusable_password()
            user.save(update_fields=["password"])
    return NewLink(link, token)


def user_invite(*, username: str, role: str, email: str = "", access: str = "link", by: Any = None) -> Access:
    """Create a new person who gets in with a one-time link (``access="link"``) or a generated password.

    Either is returned once, to be passed on; neither is stored in clear.
    """
    if access not in ACCESS:
        raise AccessError(f"access is one of {', '.join(ACCESS)}, got {access!r}", field="access")
    with transaction.atomic():
        saved = user_save(
            username=username, role=role, email=email, must_be_new=True, generate_password=access == "password"
        )
        if access == "password":
            return Access(saved.user, password=saved.password)
        return Access(saved.user, link=access_link_create(user=saved.user, purpose=AccessLink.Purpose.INVITE, by=by))


def password_reset(*, user: Any, access: str = "link", by: Any = None) -> Access:
    """Reset ``user``'s password: a one-time link they open, or a generated password shown once.

    Either way the old password stops working at once, and so does every session they have open.
    """
    if access not in ACCESS:
        raise AccessError(f"access is one of {', '.join(ACCESS)}, got {access!r}", field="access")
    if not user.is_active:
        raise AccessError(f"{user.username} is deactivated: bring them back before resetting their password")
    if access == "link":
        return Access(user, link=access_link_create(user=user, purpose=AccessLink.Purpose.RESET, by=by))
    password = generated_password()
    with transaction.atomic():
        AccessLink.objects.filter(user=user, used_at__isnull=True, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        user.set_password(password)
        user.save(update_fields=["password"])
    return Access(user, password=password)


def access_link_find(*, token: str) -> AccessLink:
    """The open link ``token`` names; :class:`AccessError` saying why when it cannot be used."""
    link = AccessLink.objects.select_related("user").filter(digest=secret_digest(token or "")).first()
    if link is None:
        raise AccessError(
            "This link is not valid. Check that it was copied whole, or ask your eval owner for a new one."
        )
    if link.used_at is not None:
        raise AccessError(
            "This link was used already: log in with the password you set, or ask your eval owner for a new link."
        )
    if link.revoked_at is not None:
        raise AccessError("This link was replaced by a newer one: use the latest link you were sent.")
    if link.expires_at <= timezone.now():
        raise AccessError("This link has expired: ask your eval owner for a new one.")
    if not link.user.is_active:
        raise AccessError("This account is deactivated: ask your eval owner.")
    return link


def access_link_use(*, token: str, password: str) -> Any:
    """Set the link's person's password and spend the link (once: a second use is refused); return the user."""
    link = access_link_find(token=token)
    _check_password(password, link.user)
    now = timezone.now()
    with transaction.atomic():
        spent = AccessLink.objects.filter(
            pk=link.pk, used_at__isnull=True, revoked_at__isnull=True, expires_at__gt=now
        ).update(used_at=now)
        if spent != 1:  # used or replaced between the check and now
            raise AccessError("This link was used already: log in with the password you set.")
        user = User.objects.select_for_update().get(pk=link.user_id)
        user.set_password(password)
        user.save(update_fields=["password"])
    return user


def _active_owners() -> int:
    return get_user_model().objects.filter(is_active=True, role=User.Role.EVAL_OWNER).count()


def user_set_active(*, user: Any, active: bool, by: Any = None) -> Any:
    """Deactivate a person (they are logged out, their tokens and links stop working; their labels stay), or bring them back.

    Refused for oneself, and for the last active eval owner (nobody could manage the instance).
    """
    if user.is_active == active:
        return user
    if not active:
        if by is not None and getattr(by, "pk", None) == user.pk:
            raise AccessError("You cannot deactivate yourself: ask another eval owner.")
        if user.role == User.Role.EVAL_OWNER and _active_owners() <= 1:
            raise AccessError(f"{user.username} is the last active eval owner: invite another one first.")
    with transaction.atomic():
        user.is_active = active
        user.save(update_fields=["is_active"])
        if not active:
            AccessLink.objects.filter(user=user, used_at__isnull=True, revoked_at__isnull=True).update(
                revoked_at=timezone.now()
            )
    return user
