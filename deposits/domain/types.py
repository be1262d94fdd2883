"""The deposit's value types: enums with their meanings, a scope, a belief reference, a deposit."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

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


def is_live(*, retracted: bool, superseded: bool) -> bool:
    """A deposit counts in its bag and in recall while it is neither soft-retracted nor superseded.

    The one live rule: the ORM (`deposits.models`) and SQL (`deposits.sql.rules`) spellings are
    pinned to it by a property test.
    """
    return not retracted and not superseded


FACETS: tuple[str, ...] = ("model", "dataset", "env", "version", "n", "seed")
TEXT_FACETS: tuple[str, ...] = ("model", "dataset", "env", "version")
INT_FACETS: tuple[str, ...] = ("n", "seed")


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

    def facets_dict(self) -> dict[str, str | int | None]:
        return dict(zip(FACETS, self.facets, strict=True))


@dataclass(frozen=True, slots=True)
class BeliefRef:
    """The belief a deposit carries: which key it speaks to and the value it claims."""

    key: str
    value: str


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
    # Audit state, filled by the selectors that show it (deposit_records(with_state=True)).
    superseded_by: tuple[str, ...] = ()
    retracted_at: datetime | None = None
    retracted_reason: str | None = None

    @property
    def retracted(self) -> bool:
        return self.retracted_at is not None

    @property
    def is_live(self) -> bool:
        """Counts in its bag and in recall: the one live rule, `is_live`."""
        return is_live(retracted=self.retracted, superseded=bool(self.superseded_by))

    @property
    def state(self) -> str:
        """`live`, else why not: `retracted` (soft) or `superseded` (a later deposit corrects it)."""
        if self.is_live:
            return "live"
        return "retracted" if self.retracted else "superseded"
