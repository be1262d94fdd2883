"""Who may use the dashboard: the reviewer and operator roles, checked by every view and fragment.

A role is membership of the Django group of that name (created by a data migration in
`beliefs`); a superuser counts as an operator, and an operator may do all a reviewer does.
Anonymous requests go to the login page with `?next=`; a login without the role needed gets
403, rendered by `templates/403.html` in the frame with the message raised here, and logged by
`refused` as one line (who, what, why): a refusal is no fault, so it has no traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.urls import get_resolver, get_urlconf
from django.utils.log import log_response
from django_htmx.http import HttpResponseClientRedirect

REVIEWER = "reviewer"
OPERATOR = "operator"
ROLES = (REVIEWER, OPERATOR)

_ROLE_CACHE = "_atlaso_roles"

type User = AbstractBaseUser | AnonymousUser
type View = Callable[..., HttpResponse]


def roles_of(user: User) -> frozenset[str]:
    """The dashboard roles `user` holds, read once per request and kept on the user object."""
    if not user.is_authenticated or not user.is_active:
        return frozenset()
    cached = getattr(user, _ROLE_CACHE, None)
    if cached is None:
        if user.is_superuser:
            cached = frozenset(ROLES)
        else:
            names = set(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
            # An operator may do everything a reviewer may.
            cached = frozenset(names | {REVIEWER}) if OPERATOR in names else frozenset(names)
        setattr(user, _ROLE_CACHE, cached)
    return cached


def is_reviewer(user: User) -> bool:
    """May read memory, resolve conflicts, retract deposits and confirm beliefs."""
    return REVIEWER in roles_of(user)


def is_operator(user: User) -> bool:
    """May also configure tiers, channels and API keys and erase deposits."""
    return OPERATOR in roles_of(user)


def _needed(role: str) -> str:
    return "the operator role" if role == OPERATOR else "the reviewer or operator role"


def denial_message(user: User, role: str) -> str:
    """What the 403 page says: the role needed and the role this login has."""
    has = "is a reviewer" if roles_of(user) else "has no dashboard role"
    return (
        f"This needs {_needed(role)}. You are logged in as “{user.get_username()}”, who {has}. "
        f"An operator can grant a role with: manage.py create_login {user.get_username()} --role {role}"
    )


class RoleRequired(PermissionDenied):
    """A login without the role a page or action needs: the 403 page says its message."""

    def __init__(self, user: User, role: str) -> None:
        super().__init__(denial_message(user, role))
        self.role = role


def require_role(request: HttpRequest, role: str) -> None:
    """Raise RoleRequired, a PermissionDenied (403), unless the logged-in user holds `role`.

    For a view that is open to reviewers but has an operator-only action in it (Erase).
    The view's decorator has already sent anonymous requests to the login page.
    """
    if role not in roles_of(request.user):
        raise RoleRequired(request.user, role)


def refused(request: HttpRequest, denial: PermissionDenied) -> HttpResponse:
    """The 403 page for `denial` (the site's 403 handler: `templates/403.html`), logged as one line.

    The line says who was refused what and why, where Django would log a traceback.
    """
    response = get_resolver(get_urlconf()).resolve_error_handler(403)(request, exception=denial)
    user = getattr(request, "user", None) or AnonymousUser()
    who = user.get_username() if user.is_authenticated else "anonymous"
    held = ", ".join(sorted(roles_of(user))) or "no dashboard role"
    why = (
        f"needs {_needed(denial.role)}"
        if isinstance(denial, RoleRequired)
        else str(denial) or "no permission"
    )
    # log_response marks the response as logged, so Django does not log it again.
    log_response(
        "access refused: %s %s for %s (%s): %s",
        request.method,
        request.path,
        who,
        held,
        why,
        response=response,
        request=request,
    )
    return response


def _login_redirect(request: HttpRequest) -> HttpResponse:
    # An htmx request swaps its answer into part of a page: send the whole window to the
    # login page instead, and come back to the page the user was on, not to the fragment.
    htmx = getattr(request, "htmx", None)
    if htmx:
        back = htmx.current_url_abs_path or request.get_full_path()
        login = redirect_to_login(back)
        return HttpResponseClientRedirect(login.url)
    return redirect_to_login(request.get_full_path())


def role_required(role: str) -> Callable[[View], View]:
    """A view decorator: anonymous → login with `?next=`; logged in without `role` → 403."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; use one of {ROLES}")

    def decorator(view: View) -> View:
        @wraps(view)
        def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return _login_redirect(request)
            require_role(request, role)
            return view(request, *args, **kwargs)

        return checked

    return decorator


reviewer_required = role_required(REVIEWER)
operator_required = role_required(OPERATOR)


def forget_roles(user: User) -> None:
    """Drop the roles cached on `user`, after a write that changed them."""
    if hasattr(user, _ROLE_CACHE):
        delattr(user, _ROLE_CACHE)
