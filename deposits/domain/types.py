"""The deposit's value types and their wire format (`to_dict()` carries `"kind"`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

POLARITY_MEANINGS: dict[str, str] = {
    "positive": "claim that X works / is true",
    "negative": "claim that X doesn't work / failed",
    "cautionary": "claim with caveats",
    "open": "note or open question",
}
POLARITIES: tuple[str, ...] = tuple(POLARITY_MEANINGS)
DIRECTIONAL: tuple[str, ...] = ("positive", "negative", "cautionary")

EVIDENCE_GRADE_MEANINGS: dict[str, str] = {
    "anecdotal": "one person, one observation, no logs",
    "observed": "measured at least once with artifacts",
    "replicated": "multiple independent observations agree",
    "verified": "replicated and recorded with provenance",
}
# Ordered weakest to strongest: the gate compares grades by their index here.
EVIDENCE_GRADES: tuple[str, ...] = tuple(EVIDENCE_GRADE_MEANINGS)

REPRO_STATUS_MEANINGS: dict[str, str] = {
    "unreplicated": "nobody has tried to reproduce it yet",
    "replicated": "someone reproduced it",
    "failed_repro": "a reproduction was tried and failed",
}
REPRO_STATUSES: tuple[str, ...] = tuple(REPRO_STATUS_MEANINGS)

RETRACT_MODE_MEANINGS: dict[str, str] = {
    "soft": "mark retracted, keep readable for audit, drop from recall and bag counts",
    "hard": "erase the row, its index entry and its edges (GDPR; needs the erase permission)",
}
BULK_MODE_MEANINGS: dict[str, str] = {
    "skip": "commit every item that passes, report the others",
    "abort": "commit nothing when any item fails",
}

# Every enum a client can send, by field name: validation errors list these meanings.
ENUMS: dict[str, dict[str, str]] = {
    "polarity": POLARITY_MEANINGS,
    "evidence_grade": EVIDENCE_GRADE_MEANINGS,
    "repro_status": REPRO_STATUS_MEANINGS,
    "mode": RETRACT_MODE_MEANINGS,
    "on_gate_reject": BULK_MODE_MEANINGS,
}

FACETS: tuple[str, ...] = ("model", "dataset", "env", "version", "n", "seed")
TEXT_FACETS: tuple[str, ...] = ("model", "dataset", "env", "version")
INT_FACETS: tuple[str, ...] = ("n", "seed")


def isoformat(moment: datetime) -> str:
    """ISO 8601 in UTC with microseconds and offset, the one timestamp form on the wire."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True, slots=True)
class Scope:
    """Six facets that pin a claim to a context, plus a free-text note (not a facet)."""

    model: str | None = None
    dataset: str | None = None
    env: str | None = None
    version: str | None = None
    n: int | None = None
    seed: int | None = None
    note: str | None = None

    @property
    def facets(self) -> tuple[str | int | None, ...]:
        return (self.model, self.dataset, self.env, self.version, self.n, self.seed)

    @property
    def breadth(self) -> int:
        """How many of the six facets are set (`note` never counts)."""
        return sum(value is not None for value in self.facets)

    @property
    def is_empty(self) -> bool:
        return self.breadth == 0 and self.note is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "dataset": self.dataset,
            "env": self.env,
            "version": self.version,
            "n": self.n,
            "seed": self.seed,
            "note": self.note,
        }

    def facets_dict(self) -> dict[str, str | int | None]:
        return dict(zip(FACETS, self.facets, strict=True))


@dataclass(frozen=True, slots=True)
class BeliefRef:
    """The belief a deposit carries: which key it speaks to and the value it claims."""

    key: str
    value: str

    def to_dict(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value}


@dataclass(frozen=True, slots=True)
class Deposit:
    """One immutable claim about one memory owner."""

    id: str
    content: str
    polarity: str
    evidence_grade: str
    scope: Scope
    user_id: str
    created_at: datetime
    tags: tuple[str, ...] = ()
    contradicts: tuple[str, ...] = ()
    artifact_refs: tuple[str, ...] = ()
    author: str | None = None
    author_role: str | None = None
    repro_status: str = "unreplicated"
    task_id: str | None = None
    channel: str | None = None
    belief: BeliefRef | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": "deposit",
            "id": self.id,
            "content": self.content,
            "polarity": self.polarity,
            "evidence_grade": self.evidence_grade,
            "scope": self.scope.to_dict(),
            "user_id": self.user_id,
            "tags": list(self.tags),
            "contradicts": list(self.contradicts),
            "artifact_refs": list(self.artifact_refs),
            "created_at": isoformat(self.created_at),
            "author": self.author,
            "author_role": self.author_role,
            "repro_status": self.repro_status,
            "task_id": self.task_id,
            "channel": self.channel,
            "belief": self.belief.to_dict() if self.belief else None,
        }
        data.update(self.extra)
        return data
