"""Belief keys and values: validation with teaching errors, and the comparison form."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta
from typing import Any

from atlaso_site.lib.errors import VALIDATION_ERROR, AtlasoError
from atlaso_site.lib.text import is_blank

BELIEF_KEY_PATTERN = re.compile(r"[a-z0-9][a-z0-9_.:-]{0,127}")
MAX_KEY_LENGTH = 128
MAX_VALUE_LENGTH = 500
# A tier's ceiling κ lies strictly between these (no channel is never, or always, right). Ints, so
# the API's schema states them as 0 and 1.
CEILING_ABOVE = 0
CEILING_BELOW = 1
CEILING_BOUNDS = f"{CEILING_ABOVE} and {CEILING_BELOW}"
#: What a tier change with a ceiling outside the bounds is told (the services' and the admin's words).
CEILING_RULE = f"a ceiling must lie strictly between {CEILING_BOUNDS}"
# A claim may be stamped a little ahead of the server's clock (client clock skew), not more.
MAX_FUTURE_SKEW = timedelta(minutes=5)


class BeliefInputError(AtlasoError, ValueError):
    """An input to the belief layer breaks a rule; `message` says which rule and the fix."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(VALIDATION_ERROR, message, field=field)
        self.args = (f"{field}: {message}",)
        self.field = field


def collapse_whitespace(text: str) -> str:
    """Return `text` with every run of whitespace made one space and the ends stripped."""
    return " ".join(text.split())


def normalize_value(text: str) -> str:
    """Return the comparison form of a value: whitespace collapsed, stripped, casefolded."""
    return collapse_whitespace(text).casefold()


def clean_belief_key(key: Any) -> str:
    """Return `key` when it is a valid belief key, else raise a teaching error."""
    if not isinstance(key, str):
        raise BeliefInputError(
            "key", f"a belief key is a string like 'coffee_ratio', not {type(key).__name__}"
        )
    if BELIEF_KEY_PATTERN.fullmatch(key):
        return key
    if not key:
        problem = "it is empty"
    elif len(key) > MAX_KEY_LENGTH:
        problem = f"it is {len(key)} characters long; the limit is {MAX_KEY_LENGTH}"
    elif not re.fullmatch(r"[a-z0-9]", key[0]):
        problem = f"it starts with {key[0]!r}; the first character must be a-z or 0-9"
    else:
        bad = next(ch for ch in key if not re.fullmatch(r"[a-z0-9_.:-]", ch))
        problem = f"it contains {bad!r}"
    raise BeliefInputError(
        "key",
        f"{key!r} is not a belief key: {problem}. A key is 1 to {MAX_KEY_LENGTH} characters of "
        "lowercase letters, digits and _ . : -, starting with a letter or digit, "
        "e.g. 'coffee_ratio' or 'diet:milk'.",
    )


EMPTY_VALUE = "the value is empty; give the canonical short answer, e.g. '5 oz per tbsp'"


def clean_value(value: Any) -> str:
    """Return the display spelling of a value sent (whitespace collapsed), else raise a teaching error.

    A value that shows nothing (only whitespace and invisible characters) is empty.
    """
    display = display_value(value)
    if is_blank(display):
        raise BeliefInputError("value", EMPTY_VALUE)
    return display


def display_value(value: Any) -> str:
    """Return the display spelling of a value already in the log (whitespace collapsed).

    The rule folds the log with it: a value logged before invisible-only text counted as empty
    must still replay, so only `clean_value`, at the door, refuses that.
    """
    if not isinstance(value, str):
        raise BeliefInputError("value", f"a belief value is a short text answer, not {type(value).__name__}")
    display = collapse_whitespace(value)
    if not display:
        raise BeliefInputError("value", EMPTY_VALUE)
    if len(display) > MAX_VALUE_LENGTH:
        raise BeliefInputError(
            "value",
            f"the value is {len(display)} characters after collapsing whitespace; the limit is "
            f"{MAX_VALUE_LENGTH}. A belief holds the short answer; keep the full text in a "
            "deposit and point to it.",
        )
    return display


def clean_unit_interval(field: str, number: Any) -> float:
    """Return `number` as a float in [0, 1], else raise a teaching error naming `field`."""
    # bool is an int subclass; True is not a confidence anyone meant to send.
    if isinstance(number, bool) or not isinstance(number, int | float):
        raise BeliefInputError(field, f"{field} is a number from 0 to 1, e.g. 0.7")
    as_float = float(number)
    if not math.isfinite(as_float) or not 0.0 <= as_float <= 1.0:
        raise BeliefInputError(field, f"{field} must be from 0 to 1 inclusive; got {number!r}")
    return as_float


def clean_content_confidence(confidence: Any) -> float | None:
    """Return the content confidence (None when absent) as a float in [0, 1]."""
    if confidence is None:
        return None
    return clean_unit_interval("content_confidence", confidence)


def is_ceiling(number: float) -> bool:
    """Whether `number` may be a tier's ceiling κ: strictly between 0 and 1 (NaN is not)."""
    return CEILING_ABOVE < number < CEILING_BELOW


def clean_ceiling(field: str, ceiling: Any) -> float:
    """Return a tier ceiling strictly between 0 and 1, else raise a teaching error."""
    if isinstance(ceiling, bool) or not isinstance(ceiling, int | float):
        raise BeliefInputError(field, f"{field} is a number strictly between {CEILING_BOUNDS}, e.g. 0.98")
    as_float = float(ceiling)
    if not is_ceiling(as_float):
        raise BeliefInputError(
            field,
            f"a tier ceiling is strictly between {CEILING_BOUNDS} (no channel is never or always "
            f"right); got {ceiling!r}",
        )
    return as_float


def clean_observed_at(observed_at: Any, *, now: datetime) -> datetime:
    """Return the claim time when it is aware and at most five minutes ahead of `now`."""
    if not isinstance(observed_at, datetime):
        raise BeliefInputError(
            "observed_at", "observed_at is an ISO 8601 time with an offset, e.g. 2025-06-01T09:30:00Z"
        )
    if observed_at.utcoffset() is None:
        raise BeliefInputError(
            "observed_at",
            "observed_at has no time zone; add an offset such as Z or +02:00 so the claim "
            "can be ordered against others",
        )
    if observed_at > now + MAX_FUTURE_SKEW:
        raise BeliefInputError(
            "observed_at",
            f"observed_at {observed_at.isoformat()} is more than five minutes in the future; "
            "it is when the claim was made, so it cannot be later than now",
        )
    return observed_at
