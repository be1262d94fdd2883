"""The dashboard's shared cast: one login per role, for client tests and browser tests alike."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser, Group

from atlaso_site.access.roles import OPERATOR, REVIEWER

PASSWORD = "correct-horse-battery"

# role → username; "no-role" is a login in neither group, "superuser" counts as an operator.
LOGINS = {
    "reviewer": "rita",
    "second-reviewer": "remy",
    "operator": "otto",
    "no-role": "nora",
    "superuser": "sam",
}
GROUPS = {"reviewer": REVIEWER, "second-reviewer": REVIEWER, "operator": OPERATOR}


def make_login(role: str, *, password: str | None = None) -> AbstractUser:
    """The cast's login for `role`, created on first use.

    Without `password` the login gets an unusable one (for `force_login`): hashing a real
    password costs about a second on a loaded machine.
    """
    username = LOGINS[role]
    users = get_user_model()
    user = users.objects.filter(username=username).first()
    if user is None:
        if role == "superuser":
            user = users.objects.create_superuser(username, "", password)
        else:
            user = users.objects.create_user(username, "", password)
        if role in GROUPS:
            user.groups.add(Group.objects.get(name=GROUPS[role]))
    return user
