"""The memory owner's id (the agent's end user, not a login): one rule for every app."""

from __future__ import annotations

import re
from typing import Any

from atlaso_site.lib.errors import invalid

USER_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$")
USER_ID_RULE = (
    "user_id must be 1..128 characters of letters, digits and _ . : @ -, starting with "
    'a letter or digit (e.g. "alice" or "tenant-a:alice")'
)


def is_user_id(value: Any) -> bool:
    return isinstance(value, str) and USER_ID_PATTERN.fullmatch(value) is not None


def validate_user_id(value: Any) -> str:
    """Return `value` when it is a well-formed user_id, else raise a validation_error."""
    if not is_user_id(value):
        raise invalid("user_id", USER_ID_RULE)
    return value
