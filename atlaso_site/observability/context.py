"""The request id of the work in hand: a request, or a job a request started.

A client may send its own `X-Request-ID`; a sane one (at most 128 characters of letters,
digits and `._:@+=/-`, as UUIDs, ULIDs and most tracing ids are) is kept so the client can find
its request in our logs, and anything else (a newline that would forge a log line, 10 kB, a
control character) is replaced by one made here, never logged as given. The id lives in a
context variable: each gevent greenlet, thread and task has its own.
"""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar, Token

HEADER = "X-Request-ID"
# The header as WSGI names it in a request's environ.
META_KEY = "HTTP_X_REQUEST_ID"
MAX_LENGTH = 128
_SANE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+=/-]{0,127}")

_current: ContextVar[str | None] = ContextVar("atlaso_request_id", default=None)


def new_request_id() -> str:
    """A fresh id: 32 hex digits."""
    return uuid.uuid4().hex


def sane_request_id(sent: str | None) -> str | None:
    """`sent` when it is a sane id to keep, else None."""
    if sent and len(sent) <= MAX_LENGTH and _SANE.fullmatch(sent):
        return sent
    return None


def request_id_for(sent: str | None) -> str:
    """The id a request is known by: the one it sent when sane, else a new one."""
    return sane_request_id(sent) or new_request_id()


def current_request_id() -> str | None:
    """The id of the request (or the job it started) being worked on here, if any."""
    return _current.get()


def enter_request_id(request_id: str | None) -> Token[str | None]:
    """Work under `request_id` until `leave_request_id` is given the token this returns."""
    return _current.set(request_id)


def leave_request_id(token: Token[str | None]) -> None:
    _current.reset(token)
