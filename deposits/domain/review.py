"""The review desk's rules in plain Python: a claim's remaining time, and the deposit a resolution writes.

What a resolution says holds when the reviewer does not say it in their own words is the kept
deposits' contents; its grade is their best, its artifacts the union of theirs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Protocol

from atlaso_site.lib.errors import invalid
from deposits.domain.types import EVIDENCE_GRADES
from deposits.domain.validation import (
    MAX_CONTENT,
    MAX_CONTRADICTS,
    MAX_LIST,
    CorrectionDraft,
    DepositDraft,
    DepositValidationError,
    validate_scope,
)

# How the kept deposits' contents are joined into the one claim that holds (static/js/resolve.js
# pre-fills the form's `holds` the same way).
CLAIM_JOINER = "\n"


def minutes_left(expires_at: datetime, now: datetime) -> int:
    """Whole minutes before a claim expires, rounded up: "1 min left" until it is gone."""
    return max(1, math.ceil((expires_at - now).total_seconds() / 60))


def held_message(reviewer: str, expires_at: datetime, now: datetime) -> str:
    """How the pages say that someone holds a conflict: "rita is on this · 7 min left"."""
    return f"{reviewer} is on this · {minutes_left(expires_at, now)} min left"


def claim_that_holds(contents: Iterable[str]) -> str:
    """What a resolution holds by default: the kept deposits' contents, each once, in order."""
    return CLAIM_JOINER.join(dict.fromkeys(text.strip() for text in contents if text.strip()))


class KeptDeposit(Protocol):
    """What a resolution copies from a deposit it keeps."""

    content: str
    polarity: str
    evidence_grade: str
    artifact_refs: Sequence[str]


def _kept_claim(kept: Sequence[KeptDeposit]) -> str:
    """The claim that holds when the reviewer states none: the kept deposits' contents."""
    claim = claim_that_holds(d.content for d in kept)
    if len(claim) > MAX_CONTENT:
        raise invalid(
            "holds",
            f"the kept deposits' contents come to {len(claim)} characters together, over the "
            f"{MAX_CONTENT} one claim may hold: say what holds in fewer words",
        )
    return claim


def _at_most(field: str, values: Sequence[str], limit: int) -> tuple[str, ...]:
    """`values`, within the bound a client's deposit has (validation.py, in its words), or its error."""
    if len(values) > limit:
        raise DepositValidationError(field, f"{field} has {len(values)} entries; at most {limit} are allowed")
    return tuple(values)


def resolution_correction(
    *,
    user_id: str,
    facets: Mapping[str, str | int | None],
    kept: Sequence[KeptDeposit],
    overruled: Sequence[str],
    stated: str | None,
    reason: str,
    reviewer: str,
) -> CorrectionDraft:
    """The correction a resolution writes: it keeps `kept` (one polarity) and supersedes `overruled`.

    Its content is `stated` (the reviewer's words, validated) or else the kept deposits'
    contents; it copies their polarity, best grade and artifacts, so it passes the gate whenever
    they did, and lands in the bag of `facets`. `reason` (validated) goes on its edges. Its
    fields are checked in the order a client's correction's are, and against the same bounds: a
    resolution unites its kept deposits' lists, and a bag's facet may be longer in its NFC form.
    """
    content = stated or _kept_claim(kept)
    contradicts = _at_most("contradicts", overruled, MAX_CONTRADICTS)
    scope = validate_scope(facets)
    artifacts = _at_most(
        "artifact_refs", list(dict.fromkeys(r for d in kept for r in d.artifact_refs)), MAX_LIST
    )
    draft = DepositDraft(
        user_id=user_id,
        content=content,
        polarity=kept[0].polarity,
        evidence_grade=max((d.evidence_grade for d in kept), key=EVIDENCE_GRADES.index),
        scope=scope,
        artifact_refs=artifacts,
        contradicts=contradicts,
        author=reviewer,
        author_role="reviewer",
    )
    return CorrectionDraft(draft=draft, reason=reason, inherits_scope=False)
