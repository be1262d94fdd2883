"""The one write that makes a dashboard login: a user with its password and its one role."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, Group
from django.contrib.auth.password_validation import validate_password
from django.db import transaction

from atlaso_site.access.roles import ROLES, forget_roles


@transaction.atomic
def login_save(*, username: str, role: str, password: str) -> tuple[AbstractBaseUser, bool]:
    """Create the login `username` with `role`, or give an existing one this password and role.

    The password goes through AUTH_PASSWORD_VALIDATORS; a ValidationError says what is wrong.
    Returns the user and whether it was created.
    """
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; use one of {ROLES}")
    users = get_user_model()
    users._meta.get_field(users.USERNAME_FIELD).clean(username, None)
    user = users.objects.filter(username=username).first()
    created = user is None
    if user is None:
        user = users(username=username)
    validate_password(password, user)
    user.set_password(password)
    user.save()
    groups = {name: Group.objects.get_or_create(name=name)[0] for name in ROLES}
    user.groups.remove(*(group for name, group in groups.items() if name != role))
    user.groups.add(groups[role])
    forget_roles(user)
    return user, created
