"""The result types: frozen, slotted dataclasses read from the wire's `kind` objects.

Each is built by `from_wire`, which reads the fields it knows and ignores the rest (a newer
server must not break an older client), and written back by `to_dict`, the wire form with its
`"kind"`. Timestamps are timezone-aware datetimes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal, overload

Polarity = Literal["positive", "negative", "cautionary", "open"]
EvidenceGrade = Literal["anecdotal", "observed", "replicated", "verified"]
ReproStatus = Literal["unreplicated", "replicated", "failed_repro"]
# How recall finds deposits, and which of its rankings found a hit.
RecallMode = Literal["words", "meaning", "hybrid"]
MatchedBy = Literal["words", "meaning", "both"]
# How a deposit is withdrawn (retract's `mode`): kept for audit, or erased.
RetractMode = Literal["soft", "hard"]
# What a bulk write does when the gate refuses an item: commit the rest, or nothing.
OnGateReject = Literal["skip", "abort"]
Wire = Mapping[str, Any]

FACETS = ("model", "dataset", "env", "version", "n", "seed")


def _time(value: Any) -> datetime:
    if isinstance(value, str):
        parsed = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
    else:
        parsed = value
    if not isinstance(parsed, datetime):
        raise TypeError(f"expected an ISO 8601 timestamp, got {value!r}")
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def _maybe_time(value: Any) -> datetime | None:
    return None if value is None else _time(value)


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="microseconds")


def _strings(values: Any) -> tuple[str, ...]:
    # On the hot path of every deposit read: most lists are empty, and JSON gives strings.
    if not values:
        return ()
    return tuple(v if isinstance(v, str) else str(v) for v in values)


@dataclass(frozen=True, slots=True)
class Scope:
    """Six facets that pin a claim to a context (same facets: same bag), plus a free-text note."""

    model: str | None = None
    dataset: str | None = None
    env: str | None = None
    version: str | None = None
    n: int | None = None
    seed: int | None = None
    note: str | None = None  # folded into the full-text index; not a facet

    @classmethod
    def from_wire(cls, data: Wire | None) -> Scope:
        if not data:
            return cls()
        get = data.get
        return cls(
            get("model"), get("dataset"), get("env"), get("version"), get("n"), get("seed"), get("note")
        )

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in (*FACETS, "note")}

    @property
    def breadth(self) -> int:
        """How many of the six facets are set: 2 or more is narrow, otherwise broad."""
        return sum(getattr(self, name) is not None for name in FACETS)


@dataclass(frozen=True, slots=True)
class BeliefRef:
    """The belief a deposit states: its key and the value it claims."""

    key: str
    value: str

    @classmethod
    def from_wire(cls, data: Wire) -> BeliefRef:
        return cls(key=data["key"], value=data["value"])

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value}


@dataclass(frozen=True, slots=True)
class Deposit:
    """One immutable claim. To "edit" it, `contradict()` it."""

    id: str
    content: str
    polarity: Polarity
    evidence_grade: EvidenceGrade
    scope: Scope
    user_id: str
    tags: tuple[str, ...]
    contradicts: tuple[str, ...]
    artifact_refs: tuple[str, ...]
    created_at: datetime
    author: str | None
    author_role: str | None
    repro_status: ReproStatus
    task_id: str | None
    channel: str | None = None
    belief: BeliefRef | None = None
    # Audit state, from get() and bag(); None where the read did not say (lists, recall).
    superseded_by: tuple[str, ...] | None = None
    retracted: bool | None = None
    retracted_reason: str | None = None
    state: str | None = None  # in a bag: "live", "superseded" or "retracted"

    @classmethod
    def from_wire(cls, data: Wire) -> Deposit:
        belief = data.get("belief")
        return cls(
            id=str(data["id"]),
            content=data["content"],
            polarity=data["polarity"],
            evidence_grade=data["evidence_grade"],
            scope=Scope.from_wire(data.get("scope")),
            user_id=data["user_id"],
            tags=_strings(data.get("tags")),
            contradicts=_strings(data.get("contradicts")),
            artifact_refs=_strings(data.get("artifact_refs")),
            created_at=_time(data["created_at"]),
            author=data.get("author"),
            author_role=data.get("author_role"),
            repro_status=data.get("repro_status", "unreplicated"),
            task_id=data.get("task_id"),
            channel=data.get("channel"),
            belief=BeliefRef.from_wire(belief) if belief else None,
            superseded_by=_strings(data["superseded_by"]) if "superseded_by" in data else None,
            retracted=bool(data["retracted"]) if "retracted" in data else None,
            retracted_reason=data.get("retracted_reason"),
            state=data.get("state"),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
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
            "created_at": _iso(self.created_at),
            "author": self.author,
            "author_role": self.author_role,
            "repro_status": self.repro_status,
            "task_id": self.task_id,
            "channel": self.channel,
            "belief": self.belief.to_dict() if self.belief else None,
        }
        if self.superseded_by is not None:
            out["superseded_by"] = list(self.superseded_by)
        if self.retracted is not None:
            out.update(retracted=self.retracted, retracted_reason=self.retracted_reason)
        if self.state is not None:
            out["state"] = self.state
        return out

    @property
    def is_live(self) -> bool:
        """Neither retracted nor superseded, as far as this read says (a list or recall: live)."""
        return not self.retracted and not self.superseded_by


def _verdict_fields(data: Wire) -> dict[str, Any]:
    return {
        "belief_key": data["belief_key"],
        "fact": data.get("fact"),
        "probability": float(data.get("probability", 0.0)),
        "distribution": dict(data.get("distribution") or {}),
        "unknown_mass": float(data.get("unknown_mass", 0.0)),
        "superseded": _strings(data.get("superseded")),
        "contested": _strings(data.get("contested")),
        "inert": _strings(data.get("inert")),
        "entropy_bits": float(data.get("entropy_bits", 0.0)),
        "is_uncertain": bool(data.get("is_uncertain", False)),
        "observation_count": int(data.get("observation_count", 0)),
        "effective_count": int(data.get("effective_count", 0)),
        "updated_at": _maybe_time(data.get("updated_at")),
    }


@dataclass(frozen=True, slots=True)
class BeliefVerdict:
    """What the memory asserts for a belief key, how sure it is, and what it set aside."""

    belief_key: str
    fact: str | None
    probability: float
    distribution: Mapping[str, float]
    unknown_mass: float
    superseded: tuple[str, ...]
    contested: tuple[str, ...]
    inert: tuple[str, ...]
    entropy_bits: float
    is_uncertain: bool
    observation_count: int
    effective_count: int
    updated_at: datetime | None

    @classmethod
    def from_wire(cls, data: Wire) -> BeliefVerdict:
        return cls(**_verdict_fields(data))

    def _verdict_dict(self) -> dict[str, Any]:
        return {
            "kind": "belief_verdict",
            "belief_key": self.belief_key,
            "fact": self.fact,
            "probability": self.probability,
            "distribution": dict(self.distribution),
            "unknown_mass": self.unknown_mass,
            "superseded": list(self.superseded),
            "contested": list(self.contested),
            "inert": list(self.inert),
            "entropy_bits": self.entropy_bits,
            "is_uncertain": self.is_uncertain,
            "observation_count": self.observation_count,
            "effective_count": self.effective_count,
            "updated_at": _iso(self.updated_at),
        }

    def to_dict(self) -> dict[str, Any]:
        return self._verdict_dict()


@dataclass(frozen=True, slots=True)
class HitBelief(BeliefVerdict):
    """A recalled deposit's belief: the verdict, the value this deposit claims, and its standing."""

    value: str = ""
    value_probability: float = 0.0
    asserted: bool = False

    @classmethod
    def from_wire(cls, data: Wire) -> HitBelief:
        return cls(
            **_verdict_fields(data),
            value=data.get("value", ""),
            value_probability=float(data.get("value_probability", 0.0)),
            asserted=bool(data.get("asserted", False)),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **self._verdict_dict(),
            "value": self.value,
            "value_probability": self.value_probability,
            "asserted": self.asserted,
        }


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One recall hit: the deposit (composed, not inherited) and its bag's flags."""

    deposit: Deposit
    score: float
    is_confident: bool
    has_disagreement: bool
    agreement_score: float
    is_thin_evidence: bool
    conflict_peers: tuple[str, ...] = ()
    bag_id: str = ""
    superseded: bool = False
    belief: HitBelief | None = None
    explanation: str = ""
    #: Which ranking found it: "words", "meaning" or "both" (a server before recall by meaning: words).
    matched_by: MatchedBy = "words"

    @classmethod
    def from_wire(cls, data: Wire) -> SearchResult:
        belief = data.get("belief")
        found = data.get("matched_by")
        return cls(
            deposit=Deposit.from_wire(data["deposit"]),
            score=float(data["score"]),
            is_confident=bool(data["is_confident"]),
            has_disagreement=bool(data["has_disagreement"]),
            agreement_score=float(data["agreement_score"]),
            is_thin_evidence=bool(data["is_thin_evidence"]),
            conflict_peers=_strings(data.get("conflict_peers")),
            bag_id=str(data.get("bag_id", "")),
            superseded=bool(data.get("superseded", False)),
            belief=HitBelief.from_wire(belief) if belief else None,
            explanation=data.get("explain", ""),
            matched_by=found if found in ("words", "meaning", "both") else "words",
        )

    @property
    def id(self) -> str:
        return self.deposit.id

    @property
    def content(self) -> str:
        return self.deposit.content

    @property
    def polarity(self) -> Polarity:
        return self.deposit.polarity

    @property
    def evidence_grade(self) -> EvidenceGrade:
        return self.deposit.evidence_grade

    @property
    def scope(self) -> Scope:
        return self.deposit.scope

    @property
    def tags(self) -> tuple[str, ...]:
        return self.deposit.tags

    def explain(self) -> str:
        """One sentence: why this hit is, or is not, confident (the server's)."""
        return self.explanation

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "search_result",
            "id": self.id,
            "content": self.content,
            "polarity": self.polarity,
            "evidence_grade": self.evidence_grade,
            "scope": self.scope.to_dict(),
            "tags": list(self.tags),
            "created_at": _iso(self.deposit.created_at),
            "score": self.score,
            "is_confident": self.is_confident,
            "has_disagreement": self.has_disagreement,
            "agreement_score": self.agreement_score,
            "is_thin_evidence": self.is_thin_evidence,
            "conflict_peers": list(self.conflict_peers),
            "bag_id": self.bag_id,
            "superseded": self.superseded,
            "explain": self.explanation,
            "belief": self.belief.to_dict() if self.belief else None,
            "matched_by": self.matched_by,
            "deposit": self.deposit.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class SearchResults:
    """Recall's hits, and flags computed over every matching bag, before the slice.

    Iterable, indexable, sized, falsy when empty; not a list. A `limit` cannot hide a
    conflict: `has_disagreement` is True when any matching bag disagrees.
    """

    items: tuple[SearchResult, ...]
    has_disagreement: bool
    is_confident: bool
    bag_count: int = 0
    conflict_bag_count: int = 0
    explanation: str = ""

    @classmethod
    def from_wire(cls, data: Wire) -> SearchResults:
        return cls(
            items=tuple(SearchResult.from_wire(item) for item in data.get("items", ())),
            has_disagreement=bool(data["has_disagreement"]),
            is_confident=bool(data["is_confident"]),
            bag_count=int(data.get("bag_count", 0)),
            conflict_bag_count=int(data.get("conflict_bag_count", 0)),
            explanation=data.get("explain", ""),
        )

    def __iter__(self) -> Iterator[SearchResult]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, index: int) -> SearchResult: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[SearchResult, ...]: ...
    def __getitem__(self, index: int | slice) -> SearchResult | tuple[SearchResult, ...]:
        return self.items[index]

    def __bool__(self) -> bool:
        return bool(self.items)

    def explain(self) -> str:
        """The one-line verdict, e.g. "5 hits across 2 bags · 1 bag in conflict · not confident"."""
        return self.explanation

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "search_results",
            "items": [item.to_dict() for item in self.items],
            "has_disagreement": self.has_disagreement,
            "is_confident": self.is_confident,
            "bag_count": self.bag_count,
            "conflict_bag_count": self.conflict_bag_count,
            "explain": self.explanation,
        }


@dataclass(frozen=True, slots=True)
class Diagnostics:
    """The Field Maturity Index and its four pillars: 100 × (C·P·R·D)^¼."""

    fmi: int
    coverage: float
    precision: float
    resolution: float
    density: float
    window_days: int
    deposit_count: int
    explanation: str = ""

    @classmethod
    def from_wire(cls, data: Wire) -> Diagnostics:
        return cls(
            fmi=int(data["fmi"]),
            coverage=float(data["coverage"]),
            precision=float(data["precision"]),
            resolution=float(data["resolution"]),
            density=float(data["density"]),
            window_days=int(data["window_days"]),
            deposit_count=int(data["deposit_count"]),
            explanation=data.get("explain", ""),
        )

    def explain(self) -> str:
        """The server's verdict, e.g. "Memory is healthy (FMI 72/100). Searches are returning …"."""
        return self.explanation

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "diagnostics",
            "fmi": self.fmi,
            "coverage": self.coverage,
            "precision": self.precision,
            "resolution": self.resolution,
            "density": self.density,
            "window_days": self.window_days,
            "deposit_count": self.deposit_count,
            "explain": self.explanation,
        }


@dataclass(frozen=True, slots=True)
class AddResult:
    """What `add()` and `contradict()` return: the stored deposit, and whether it was a replay."""

    deposit: Deposit
    is_idempotent_replay: bool

    @classmethod
    def from_wire(cls, data: Wire) -> AddResult:
        return cls(
            deposit=Deposit.from_wire(data["deposit"]),
            is_idempotent_replay=bool(data["is_idempotent_replay"]),
        )

    @property
    def id(self) -> str:
        return self.deposit.id

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "add_result",
            "deposit": self.deposit.to_dict(),
            "is_idempotent_replay": self.is_idempotent_replay,
        }


@dataclass(frozen=True, slots=True)
class AddItem:
    """One row of a bulk import; `idempotency_key` is required, so a retried batch is safe."""

    content: str
    idempotency_key: str
    polarity: Polarity = "open"
    evidence_grade: EvidenceGrade = "anecdotal"
    scope: Scope | None = None
    tags: tuple[str, ...] = ()
    contradicts: tuple[str, ...] = ()
    artifact_refs: tuple[str, ...] = ()
    author: str | None = None
    author_role: str | None = None
    task_id: str | None = None
    belief: BeliefRef | Mapping[str, Any] | None = None  # {key, value} and optionally the rest

    @classmethod
    def from_wire(cls, data: Wire) -> AddItem:
        scope = data.get("scope")
        return cls(
            content=data.get("content", ""),
            idempotency_key=data.get("idempotency_key", ""),
            polarity=data.get("polarity", "open"),
            evidence_grade=data.get("evidence_grade", "anecdotal"),
            scope=Scope.from_wire(scope) if isinstance(scope, Mapping) else scope,
            tags=_strings(data.get("tags")),
            contradicts=_strings(data.get("contradicts")),
            artifact_refs=_strings(data.get("artifact_refs")),
            author=data.get("author"),
            author_role=data.get("author_role"),
            task_id=data.get("task_id"),
            belief=data.get("belief"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The item as the bulk endpoint reads it (fields left at their default are left out)."""
        out: dict[str, Any] = {
            "content": self.content,
            "idempotency_key": self.idempotency_key,
            "polarity": self.polarity,
            "evidence_grade": self.evidence_grade,
        }
        if self.scope is not None:
            out["scope"] = {k: v for k, v in self.scope.to_dict().items() if v is not None}
        for name in ("tags", "contradicts", "artifact_refs"):
            if getattr(self, name):
                out[name] = list(getattr(self, name))
        for name in ("author", "author_role", "task_id"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if isinstance(self.belief, BeliefRef):
            out["belief"] = self.belief.to_dict()
        elif self.belief is not None:
            out["belief"] = {
                k: v.isoformat() if isinstance(v, datetime) else v for k, v in self.belief.items()
            }
        return out


@dataclass(frozen=True, slots=True)
class BulkReject:
    """A bulk item that did not commit: its index in the batch, the item, and why."""

    index: int
    item: AddItem
    error: Exception

    def to_dict(self) -> dict[str, Any]:
        code = getattr(self.error, "code", None) or "error"
        return {
            "index": self.index,
            "item": self.item.to_dict(),
            "error": {"code": code, "message": str(self.error)},
        }


@dataclass(frozen=True, slots=True)
class AddManyResult:
    """Skip-and-report: the items that committed, those that were replays, and those that failed."""

    committed: tuple[Deposit, ...]
    duplicates: tuple[Deposit, ...]
    failed: tuple[BulkReject, ...]
    is_partial: bool = False

    @property
    def total(self) -> int:
        return len(self.committed) + len(self.duplicates) + len(self.failed)

    @property
    def all_succeeded(self) -> bool:
        return not self.failed

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "add_many_result",
            "committed": [d.to_dict() for d in self.committed],
            "duplicates": [d.to_dict() for d in self.duplicates],
            "failed": [f.to_dict() for f in self.failed],
            "is_partial": self.is_partial,
            "total": self.total,
            "all_succeeded": self.all_succeeded,
        }


@dataclass(frozen=True, slots=True)
class RetractResult:
    """A retraction: `soft` keeps the deposit for audit, `hard` erased it."""

    deposit_id: str
    mode: str
    contradicts_preserved: tuple[str, ...] = ()

    @classmethod
    def from_wire(cls, data: Wire) -> RetractResult:
        return cls(
            deposit_id=str(data["deposit_id"]),
            mode=data["mode"],
            contradicts_preserved=_strings(data.get("contradicts_preserved")),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "retract_result",
            "deposit_id": self.deposit_id,
            "mode": self.mode,
            "contradicts_preserved": list(self.contradicts_preserved),
        }


@dataclass(frozen=True, slots=True)
class PeekView:
    """A glance at an owner's memory: the newest live deposits, their count, the FMI."""

    user_id: str
    deposits: tuple[Deposit, ...]
    total_count: int
    fmi: int
    has_recent_disagreements: bool

    @classmethod
    def from_wire(cls, data: Wire) -> PeekView:
        return cls(
            user_id=data["user_id"],
            deposits=tuple(Deposit.from_wire(d) for d in data.get("deposits", ())),
            total_count=int(data["total_count"]),
            fmi=int(data["fmi"]),
            has_recent_disagreements=bool(data["has_recent_disagreements"]),
        )

    def __iter__(self) -> Iterator[Deposit]:
        return iter(self.deposits)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "peek_view",
            "user_id": self.user_id,
            "deposits": [d.to_dict() for d in self.deposits],
            "total_count": self.total_count,
            "fmi": self.fmi,
            "has_recent_disagreements": self.has_recent_disagreements,
        }


@dataclass(frozen=True, slots=True)
class DepositPage:
    """A page of an owner's deposits, newest first, and how many there are in all."""

    items: tuple[Deposit, ...]
    total: int
    limit: int = 0
    offset: int = 0

    @classmethod
    def from_wire(cls, data: Wire) -> DepositPage:
        return cls(
            items=tuple(Deposit.from_wire(d) for d in data.get("items", ())),
            total=int(data["total"]),
            limit=int(data.get("limit", 0)),
            offset=int(data.get("offset", 0)),
        )

    def __iter__(self) -> Iterator[Deposit]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "deposit_page",
            "items": [d.to_dict() for d in self.items],
            "total": self.total,
            "limit": self.limit,
            "offset": self.offset,
        }


@dataclass(frozen=True, slots=True)
class Bag:
    """The deposits of one owner with equal facets, and their live statistics."""

    bag_id: str
    user_id: str
    scope: Scope
    size: int
    counts: Mapping[str, int]
    dominant_polarity: Polarity | None
    agreement_score: float
    has_disagreement: bool
    is_thin_evidence: bool
    is_confident: bool
    resolved: bool
    updated_at: datetime
    deposits: tuple[Deposit, ...] = ()  # bag() only: live and superseded, marked

    @classmethod
    def from_wire(cls, data: Wire) -> Bag:
        return cls(
            bag_id=str(data["bag_id"]),
            user_id=data["user_id"],
            scope=Scope.from_wire(data.get("scope")),
            size=int(data["size"]),
            counts={k: int(v) for k, v in (data.get("counts") or {}).items()},
            dominant_polarity=data.get("dominant_polarity"),
            agreement_score=float(data["agreement_score"]),
            has_disagreement=bool(data["has_disagreement"]),
            is_thin_evidence=bool(data["is_thin_evidence"]),
            is_confident=bool(data["is_confident"]),
            resolved=bool(data["resolved"]),
            updated_at=_time(data["updated_at"]),
            deposits=tuple(Deposit.from_wire(d) for d in data.get("deposits", ())),
        )

    def to_dict(self) -> dict[str, Any]:
        scope = self.scope.to_dict()
        scope.pop("note")
        out: dict[str, Any] = {
            "kind": "bag",
            "bag_id": self.bag_id,
            "user_id": self.user_id,
            "scope": scope,
            "size": self.size,
            "counts": dict(self.counts),
            "dominant_polarity": self.dominant_polarity,
            "agreement_score": self.agreement_score,
            "has_disagreement": self.has_disagreement,
            "is_thin_evidence": self.is_thin_evidence,
            "is_confident": self.is_confident,
            "resolved": self.resolved,
            "updated_at": _iso(self.updated_at),
        }
        if self.deposits:
            out["deposits"] = [d.to_dict() for d in self.deposits]
        return out


@dataclass(frozen=True, slots=True)
class BagPage:
    """A page of an owner's bags, and how many match in all."""

    items: tuple[Bag, ...]
    total: int

    @classmethod
    def from_wire(cls, data: Wire) -> BagPage:
        return cls(items=tuple(Bag.from_wire(b) for b in data.get("items", ())), total=int(data["total"]))

    def __iter__(self) -> Iterator[Bag]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "bag_page", "items": [b.to_dict() for b in self.items], "total": self.total}


@dataclass(frozen=True, slots=True)
class BeliefPage:
    """A page of an owner's belief verdicts."""

    items: tuple[BeliefVerdict, ...]
    total: int

    @classmethod
    def from_wire(cls, data: Wire) -> BeliefPage:
        return cls(
            items=tuple(BeliefVerdict.from_wire(v) for v in data.get("items", ())), total=int(data["total"])
        )

    def __iter__(self) -> Iterator[BeliefVerdict]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "belief_page", "items": [v.to_dict() for v in self.items], "total": self.total}


_REVISION_NUMBERS = (
    "ceiling",
    "reliability",
    "likelihood_ratio",
    "floor",
    "prior",
    "posterior",
    "shift",
)


@dataclass(frozen=True, slots=True)
class BeliefRevision:
    """One observation in a belief's log: what the channel's tier let it move, and the verdict after."""

    belief_key: str
    value: str
    observed_at: datetime
    sequence: int
    channel: str
    tier: str
    ceiling: float
    taint_tier: str | None
    content_confidence: float | None
    reliability: float
    likelihood_ratio: float
    floor: float
    lifted: bool
    effective: bool
    prior: float
    posterior: float
    shift: float
    deposit_id: str | None
    source_id: str | None
    verdict: BeliefVerdict | None = None

    @classmethod
    def from_wire(cls, data: Wire) -> BeliefRevision:
        verdict = data.get("verdict")
        confidence = data.get("content_confidence")
        return cls(
            belief_key=data["belief_key"],
            value=data["value"],
            observed_at=_time(data["observed_at"]),
            sequence=int(data["sequence"]),
            channel=data["channel"],
            tier=data["tier"],
            taint_tier=data.get("taint_tier"),
            content_confidence=None if confidence is None else float(confidence),
            lifted=bool(data["lifted"]),
            effective=bool(data["effective"]),
            deposit_id=data.get("deposit_id"),
            source_id=data.get("source_id"),
            verdict=BeliefVerdict.from_wire(verdict) if verdict else None,
            **{name: float(data[name]) for name in _REVISION_NUMBERS},
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "belief_revision",
            "belief_key": self.belief_key,
            "value": self.value,
            "observed_at": _iso(self.observed_at),
            "sequence": self.sequence,
            "channel": self.channel,
            "tier": self.tier,
            "taint_tier": self.taint_tier,
            "content_confidence": self.content_confidence,
            "lifted": self.lifted,
            "effective": self.effective,
            "deposit_id": self.deposit_id,
            "source_id": self.source_id,
            **{name: getattr(self, name) for name in _REVISION_NUMBERS},
        }
        if self.verdict is not None:
            out["verdict"] = self.verdict.to_dict()
        return out


@dataclass(frozen=True, slots=True)
class ApiKeyInfo:
    """The calling API key as the server knows it (never its secret)."""

    name: str
    channel: str
    tier: str
    permissions: tuple[str, ...]
    user_prefix: str
    created_at: datetime

    @classmethod
    def from_wire(cls, data: Wire) -> ApiKeyInfo:
        return cls(
            name=data["name"],
            channel=data["channel"],
            tier=data["tier"],
            permissions=_strings(data.get("permissions")),
            user_prefix=data.get("user_prefix", ""),
            created_at=_time(data["created_at"]),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "api_key",
            "name": self.name,
            "channel": self.channel,
            "tier": self.tier,
            "permissions": list(self.permissions),
            "user_prefix": self.user_prefix,
            "created_at": _iso(self.created_at),
        }


# --- A whole memory: export, import, forget (portability.md) -----------------------------------


@dataclass(frozen=True, slots=True)
class ExportHeader:
    """An export's first line: whose memory, when, from which server, and how many lines of each kind."""

    user_id: str
    exported_at: datetime
    server_version: str
    counts: Mapping[str, int]
    version: int = 1

    @classmethod
    def from_wire(cls, data: Wire) -> ExportHeader:
        return cls(
            user_id=data["user_id"],
            exported_at=_time(data["exported_at"]),
            server_version=str(data.get("server_version", "")),
            counts={str(k): int(v) for k, v in (data.get("counts") or {}).items()},
            version=int(data.get("version", 1)),
        )

    @property
    def lines(self) -> int:
        """Lines the export holds, this one included."""
        return 1 + sum(self.counts.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "atlaso_export",
            "version": self.version,
            "user_id": self.user_id,
            "exported_at": _iso(self.exported_at),
            "server_version": self.server_version,
            "counts": dict(self.counts),
        }


@dataclass(frozen=True, slots=True)
class KindCounts:
    """Lines of one kind: written, found written already, refused."""

    committed: int = 0
    duplicates: int = 0
    failed: int = 0

    @classmethod
    def from_wire(cls, data: Wire | None) -> KindCounts:
        data = data or {}
        return cls(int(data.get("committed", 0)), int(data.get("duplicates", 0)), int(data.get("failed", 0)))

    def to_dict(self) -> dict[str, Any]:
        return {"committed": self.committed, "duplicates": self.duplicates, "failed": self.failed}


@dataclass(frozen=True, slots=True)
class FailedLine:
    """A line the import did not write: its number (the header is 1) and the error's code and message."""

    line: int
    code: str
    message: str
    details: Mapping[str, Any]

    @classmethod
    def from_wire(cls, data: Wire) -> FailedLine:
        error = dict(data.get("error") or {})
        code, message = str(error.pop("code", "error")), str(error.pop("message", ""))
        return cls(line=int(data["line"]), code=code, message=message, details=error)

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "error": {"code": self.code, "message": self.message, **self.details}}


_IMPORT_KINDS = ("deposits", "edges", "retractions", "observations", "outcomes")


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import wrote, kind by kind; `failed_lines` lists the first 100 refused lines."""

    deposits: KindCounts
    edges: KindCounts
    retractions: KindCounts
    observations: KindCounts
    outcomes: KindCounts
    failed_lines: tuple[FailedLine, ...]
    is_partial: bool
    dry_run: bool
    lines: int

    @classmethod
    def from_wire(cls, data: Wire) -> ImportResult:
        return cls(
            deposits=KindCounts.from_wire(data.get("deposits")),
            edges=KindCounts.from_wire(data.get("edges")),
            retractions=KindCounts.from_wire(data.get("retractions")),
            observations=KindCounts.from_wire(data.get("observations")),
            outcomes=KindCounts.from_wire(data.get("outcomes")),
            failed_lines=tuple(FailedLine.from_wire(f) for f in data.get("failed_lines", ())),
            is_partial=bool(data.get("is_partial")),
            dry_run=bool(data.get("dry_run")),
            lines=int(data.get("lines", 0)),
        )

    @property
    def committed(self) -> int:
        """Lines written by this import, all kinds."""
        return sum(getattr(self, kind).committed for kind in _IMPORT_KINDS)

    @property
    def failed(self) -> int:
        return sum(getattr(self, kind).failed for kind in _IMPORT_KINDS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "import_result",
            **{kind: getattr(self, kind).to_dict() for kind in _IMPORT_KINDS},
            "failed_lines": [f.to_dict() for f in self.failed_lines],
            "is_partial": self.is_partial,
            "dry_run": self.dry_run,
            "lines": self.lines,
        }


@dataclass(frozen=True, slots=True)
class ForgetResult:
    """An owner forgotten: what went, and how many of its idempotency keys answer 410 erased now."""

    user_id: str
    deposits: int
    edges: int
    observations: int
    beliefs: int
    keys_tombstoned: int

    @classmethod
    def from_wire(cls, data: Wire) -> ForgetResult:
        return cls(
            user_id=data["user_id"],
            deposits=int(data["deposits"]),
            edges=int(data["edges"]),
            observations=int(data["observations"]),
            beliefs=int(data["beliefs"]),
            keys_tombstoned=int(data["keys_tombstoned"]),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "forget_result",
            "user_id": self.user_id,
            "deposits": self.deposits,
            "edges": self.edges,
            "observations": self.observations,
            "beliefs": self.beliefs,
            "keys_tombstoned": self.keys_tombstoned,
        }
