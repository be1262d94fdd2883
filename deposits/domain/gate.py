"""The write gate: which claims are strong enough to enter memory."""

from __future__ import annotations

import re
from dataclasses import dataclass

from deposits.domain.types import EVIDENCE_GRADES
from deposits.domain.validation import DepositDraft

NARROW_BREADTH = 2
_NON_ALNUM = re.compile(r"[^0-9a-z]")


@dataclass(frozen=True, slots=True)
class GateDecision:
    accepted: bool
    reason: str = ""


ACCEPT = GateDecision(True)


def is_redteam(author_role: str | None) -> bool:
    """`red_team`, `Red-Team`, `REDTEAM` … all normalise to `redteam`."""
    return author_role is not None and _NON_ALNUM.sub("", author_role.lower()) == "redteam"


def judged_grade(draft: DepositDraft) -> str:
    """The grade the gate judges by: a red-team negative or cautionary claim counts one higher."""
    index = EVIDENCE_GRADES.index(draft.evidence_grade)
    if draft.polarity in ("negative", "cautionary") and is_redteam(draft.author_role):
        index = min(index + 1, len(EVIDENCE_GRADES) - 1)
    return EVIDENCE_GRADES[index]


def _grade_at_least(grade: str, minimum: str) -> bool:
    return EVIDENCE_GRADES.index(grade) >= EVIDENCE_GRADES.index(minimum)


def judge(draft: DepositDraft) -> GateDecision:
    """Apply the gate table; a rejection names the rule broken and the next action."""
    polarity = draft.polarity
    if polarity == "open":
        return ACCEPT
    narrow = draft.scope.breadth >= NARROW_BREADTH
    grade = judged_grade(draft)
    if polarity == "positive":
        return _judge_positive(grade, narrow=narrow)
    if polarity == "negative" and not narrow:
        return _judge_broad_negative(grade)
    if draft.has_provenance:
        return ACCEPT
    return GateDecision(
        False,
        f"{polarity}/{'narrow' if narrow else 'broad'} claim requires provenance (artifact_refs, env= or "
        "version=); add an artifact_ref or set scope env= or version=",
    )


def _judge_positive(grade: str, *, narrow: bool) -> GateDecision:
    """A positive claim needs observed evidence when narrow, replicated when broad."""
    minimum = "observed" if narrow else "replicated"
    if _grade_at_least(grade, minimum):
        return ACCEPT
    width = "narrow" if narrow else "broad"
    action = (
        "upgrade evidence" if narrow else "upgrade evidence or narrow scope (e.g. add model= or dataset=)"
    )
    return GateDecision(False, f"positive/{width} claim requires evidence_grade>={minimum}; {action}")


def _judge_broad_negative(grade: str) -> GateDecision:
    """A broad negative claim needs observed evidence."""
    if _grade_at_least(grade, "observed"):
        return ACCEPT
    return GateDecision(
        False,
        "negative/broad claim requires evidence_grade>=observed; upgrade evidence or narrow "
        "scope (e.g. add model= or dataset=) and give provenance",
    )
