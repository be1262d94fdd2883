"""The belief update rule of beliefs.md: provenance-capped Bayes over named values and UNKNOWN.

Pure Python: no Django, no I/O. The state is a value; `apply` returns a new one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from typing import Any

from beliefs.domain.values import (
    BeliefInputError,
    clean_ceiling,
    clean_content_confidence,
    display_value,
    normalize_value,
)

STATE_FORMAT = 1
# The hedge floor lifts a hedged statement on a trusted channel just over the pivot.
HEDGE_MARGIN = 0.05
# r is kept off 0 and 1 so the likelihood ratio r / (1 - r) stays finite and non-zero.
MIN_RELIABILITY = 0.01
MAX_RELIABILITY = 0.99
SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class RuleSettings:
    """The rule's knobs; the pivot is fixed by the product and only a field for clarity."""

    pivot: float = 0.5
    default_content_confidence: float = 0.7
    hedge_floor: bool = True
    volatility: float = 1.0
    decay_half_life_days: float | None = None
    uncertainty_threshold: float = 0.6

    def __post_init__(self) -> None:
        if not 0.0 < self.pivot < 1.0 - HEDGE_MARGIN:
            raise ValueError(f"pivot must be in (0, {1.0 - HEDGE_MARGIN}); got {self.pivot}")
        if not 0.0 <= self.default_content_confidence <= 1.0:
            raise ValueError("default_content_confidence must be in [0, 1]")
        # ρ = 0 would leave a new value at zero mass for ever: no correction could ever land.
        if not 0.0 < self.volatility <= 1.0:
            raise ValueError(f"volatility ρ must be in (0, 1]; got {self.volatility}")
        if self.decay_half_life_days is not None and not self.decay_half_life_days > 0.0:
            raise ValueError("decay_half_life_days must be positive, or None to turn decay off")
        if not 0.0 <= self.uncertainty_threshold <= 1.0:
            raise ValueError("uncertainty_threshold θ must be in [0, 1]")


DEFAULT_SETTINGS = RuleSettings()


def reliability(
    *,
    ceiling: float,
    taint_ceiling: float | None,
    content_confidence: float | None,
    settings: RuleSettings = DEFAULT_SETTINGS,
) -> float:
    """Return r = clip(min(κ, κ_taint, c), 0.01, 0.99), with the hedge floor applied to c."""
    confidence = settings.default_content_confidence if content_confidence is None else content_confidence
    cap = ceiling if taint_ceiling is None else min(ceiling, taint_ceiling)
    if settings.hedge_floor and ceiling > settings.pivot:
        # The floor replaces c and nothing else: both ceilings stay inside the min, so taint
        # still caps (a hedge relayed from a web page stays at the web's ceiling). Because
        # min(κ, κ_taint) <= π whenever κ_taint <= π, testing κ or min(κ, κ_taint) against the
        # pivot gives the same r; the floor can never carry a tainted claim across the pivot.
        confidence = max(confidence, settings.pivot + HEDGE_MARGIN)
    return min(max(min(cap, confidence), MIN_RELIABILITY), MAX_RELIABILITY)


@dataclass(frozen=True, slots=True)
class Observation:
    """One claim about a belief: its value, claim time, the channel's ceiling and the text's c."""

    value: str
    observed_at: datetime
    ceiling: float
    taint_ceiling: float | None = None
    content_confidence: float | None = None
    sequence: int = 0

    def __post_init__(self) -> None:
        display_value(self.value)
        if not isinstance(self.observed_at, datetime) or self.observed_at.utcoffset() is None:
            raise BeliefInputError("observed_at", "observed_at must be a datetime with a time zone")
        clean_ceiling("ceiling", self.ceiling)
        if self.taint_ceiling is not None:
            clean_ceiling("taint_ceiling", self.taint_ceiling)
        clean_content_confidence(self.content_confidence)


@dataclass(frozen=True, slots=True)
class RevisionFacts:
    """What one observation did: r, L, floor φ, whether it lifted or counted, and its effect.

    A sub-pivot observation reports L = 1 (no evidence) and φ = 0 (no floor applied).
    """

    reliability: float
    likelihood_ratio: float
    floor: float
    lifted: bool
    effective: bool
    prior: float
    posterior: float
    shift: float


@dataclass(frozen=True, slots=True)
class Candidate:
    """A named value in S: comparison key, display spelling, mass and leadership history."""

    key: str
    value: str
    mass: float
    # effective_count at the candidate's latest trusted sighting: breaks ties in its favour.
    last_gain: int
    has_led: bool


def _rank(candidate: Candidate) -> tuple[float, int]:
    """Sort key for candidates: higher mass first; on equal mass, the latest to gain mass."""
    return (candidate.mass, candidate.last_gain)


def _leader(candidates: Iterable[Candidate], unknown_mass: float) -> Candidate | None:
    """The asserted candidate: argmax over S, or None when S is empty or U holds more."""
    best = max(candidates, key=_rank, default=None)
    # On an exact tie with U the named value leads: it is the one with evidence behind it.
    if best is None or unknown_mass > best.mass:
        return None
    return best


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat(timespec="microseconds")


def _from_iso(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text).astimezone(UTC)


@dataclass(frozen=True, slots=True)
class BeliefState:
    """Everything a belief's verdict needs; rebuilt exactly by replaying its observations."""

    candidates: tuple[Candidate, ...] = ()
    unknown_mass: float = 1.0
    # Display spellings of sub-pivot values not in S, in order of first sighting.
    inert: tuple[str, ...] = ()
    # Keys of values that led and lost the lead, in the order they (last) lost it.
    superseded: tuple[str, ...] = ()
    observation_count: int = 0
    effective_count: int = 0
    last_trusted_at: datetime | None = None
    updated_at: datetime | None = None

    def candidate(self, key: str) -> Candidate | None:
        """Return the candidate whose comparison key is `key`, if it is in S."""
        return next((c for c in self.candidates if c.key == key), None)

    def mass_of(self, value: str) -> float:
        """Return the mass of `value` (any spelling); 0.0 when it is not in S."""
        found = self.candidate(normalize_value(value))
        return 0.0 if found is None else found.mass

    @property
    def leader(self) -> Candidate | None:
        """The candidate asserted before any read-time decay."""
        return _leader(self.candidates, self.unknown_mass)

    @property
    def contested(self) -> tuple[str, ...]:
        """Keys of named values that never led, in order of admission to S."""
        return tuple(c.key for c in self.candidates if not c.has_led)

    def display(self, key: str) -> str:
        """Return the display spelling of the candidate keyed `key`."""
        found = self.candidate(key)
        if found is None:
            raise KeyError(key)
        return found.value

    def to_json(self) -> dict[str, Any]:
        """Return the state as plain JSON types; `from_json` restores it exactly."""
        return {
            "format": STATE_FORMAT,
            "candidates": [
                {
                    "value": c.value,
                    "mass": c.mass,
                    "last_gain": c.last_gain,
                    "has_led": c.has_led,
                }
                for c in self.candidates
            ],
            "unknown_mass": self.unknown_mass,
            "inert": list(self.inert),
            "superseded": [self.display(key) for key in self.superseded],
            "observation_count": self.observation_count,
            "effective_count": self.effective_count,
            "last_trusted_at": _iso(self.last_trusted_at),
            "updated_at": _iso(self.updated_at),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BeliefState:
        """Rebuild a state from `to_json` output."""
        if data.get("format") != STATE_FORMAT:
            raise ValueError(
                f"belief state format {data.get('format')!r} is not {STATE_FORMAT}; "
                "rebuild the state by replaying the revision log"
            )
        return cls(
            candidates=tuple(
                Candidate(
                    key=normalize_value(item["value"]),
                    value=item["value"],
                    mass=float(item["mass"]),
                    last_gain=int(item["last_gain"]),
                    has_led=bool(item["has_led"]),
                )
                for item in data["candidates"]
            ),
            unknown_mass=float(data["unknown_mass"]),
            inert=tuple(data["inert"]),
            superseded=tuple(normalize_value(value) for value in data["superseded"]),
            observation_count=int(data["observation_count"]),
            effective_count=int(data["effective_count"]),
            last_trusted_at=_from_iso(data["last_trusted_at"]),
            updated_at=_from_iso(data["updated_at"]),
        )


def _total_variation(before: BeliefState, after: BeliefState) -> float:
    """Total-variation distance between two states' distributions over S ∪ {U}."""
    # S only grows, so every key of `before` is in `after`.
    was = {c.key: c.mass for c in before.candidates}
    differences = [abs(c.mass - was.get(c.key, 0.0)) for c in after.candidates]
    differences.append(abs(after.unknown_mass - before.unknown_mass))
    return 0.5 * math.fsum(differences)


def _latest(known: datetime | None, moment: datetime) -> datetime:
    """Return the later of `known` and `moment`; `moment` when nothing is known yet."""
    return moment if known is None else max(known, moment)


def _apply_sub_pivot(
    state: BeliefState, display: str, key: str, claimed_at: datetime, r: float
) -> tuple[BeliefState, RevisionFacts]:
    """Count an observation at or below the pivot: no mass moves; a new value is noted as inert."""
    existing = state.candidate(key)
    prior = 0.0 if existing is None else existing.mass
    inert = state.inert
    if existing is None and all(normalize_value(v) != key for v in inert):
        inert = (*inert, display)
    untouched = replace(
        state,
        inert=inert,
        observation_count=state.observation_count + 1,
        updated_at=_latest(state.updated_at, claimed_at),
    )
    return untouched, RevisionFacts(
        reliability=r,
        likelihood_ratio=1.0,
        floor=0.0,
        lifted=False,
        effective=False,
        prior=prior,
        posterior=prior,
        shift=0.0,
    )


def _volatility_floor(state: BeliefState, key: str, settings: RuleSettings) -> float:
    """Return φ: the volatility ρ while another value holds mass, else 1."""
    others_hold_mass = any(c.key != key and c.mass > 0.0 for c in state.candidates)
    return settings.volatility if others_hold_mass else 1.0


def _admit(
    candidates: tuple[Candidate, ...], key: str, display: str, gain: int
) -> tuple[list[Candidate], int]:
    """Return S with the observed value in it (at zero mass if new) and that value's index."""
    admitted = list(candidates)
    if all(c.key != key for c in admitted):
        # A value joining S (inert or never seen) starts from zero: being inert carries nothing.
        # Its display spelling is the trusted one, so untrusted text cannot restyle a fact.
        admitted.append(Candidate(key=key, value=display, mass=0.0, last_gain=gain, has_led=False))
    return admitted, next(i for i, c in enumerate(admitted) if c.key == key)


def _lift_to_floor(
    masses: list[float], unknown: float, observed: int, target: float
) -> tuple[list[float], float]:
    """Set the observed mass to `target`, scaling every other mass and U down to make room."""
    scale = (1.0 - target) / (1.0 - masses[observed])
    return [target if i == observed else m * scale for i, m in enumerate(masses)], unknown * scale


def _bayes(masses: list[float], unknown: float, observed: int, r: float) -> tuple[list[float], float]:
    """Return the masses and U after Bayes with likelihood ratio L = r / (1 - r)."""
    # Multiplying the value by r and everything else by 1 - r is Bayes with L = r / (1 - r)
    # after renormalising; it keeps a first sighting exactly at p = r in floating point.
    masses = [m * r if i == observed else m * (1.0 - r) for i, m in enumerate(masses)]
    unknown *= 1.0 - r
    total = math.fsum([*masses, unknown])
    return [m / total for m in masses], unknown / total


def _superseded_after(
    superseded: tuple[str, ...], before: Candidate | None, after: Candidate | None
) -> tuple[str, ...]:
    """Move a leader that lost the lead to the end of `superseded`; drop the one that leads now."""
    keys = list(superseded)
    if before is not None and (after is None or after.key != before.key):
        keys = [k for k in keys if k != before.key] + [before.key]
    if after is not None:
        keys = [k for k in keys if k != after.key]
    return tuple(keys)


def _mark_led(candidates: list[Candidate], leader: Candidate | None) -> tuple[Candidate, ...]:
    """Flag the asserted candidate as having led, so it no longer counts as contested."""
    if leader is None:
        return tuple(candidates)
    return tuple(replace(c, has_led=True) if c.key == leader.key else c for c in candidates)


def _apply_trusted(
    state: BeliefState,
    display: str,
    key: str,
    claimed_at: datetime,
    r: float,
    settings: RuleSettings,
) -> tuple[BeliefState, RevisionFacts]:
    """Fold an observation above the pivot: admit, lift to the floor, Bayes, then hand the lead."""
    gain = state.effective_count + 1
    floor = _volatility_floor(state, key, settings)
    target = floor / (1.0 + floor)
    candidates, observed = _admit(state.candidates, key, display, gain)
    masses = [c.mass for c in candidates]
    unknown = state.unknown_mass
    prior = masses[observed]
    lifted = prior < target
    if lifted:
        masses, unknown = _lift_to_floor(masses, unknown, observed, target)
    masses, unknown = _bayes(masses, unknown, observed, r)
    # The sighted value's last_gain is what breaks a later tie in its favour (see _rank).
    moved = [
        replace(c, mass=masses[i], last_gain=gain if i == observed else c.last_gain)
        for i, c in enumerate(candidates)
    ]
    after_leader = _leader(moved, unknown)
    new_state = BeliefState(
        candidates=_mark_led(moved, after_leader),
        unknown_mass=unknown,
        inert=tuple(v for v in state.inert if normalize_value(v) != key),
        superseded=_superseded_after(state.superseded, state.leader, after_leader),
        observation_count=state.observation_count + 1,
        effective_count=gain,
        last_trusted_at=_latest(state.last_trusted_at, claimed_at),
        updated_at=_latest(state.updated_at, claimed_at),
    )
    return new_state, RevisionFacts(
        reliability=r,
        likelihood_ratio=r / (1.0 - r),
        floor=floor,
        lifted=lifted,
        effective=True,
        prior=prior,
        posterior=masses[observed],
        shift=_total_variation(state, new_state),
    )


def apply(
    state: BeliefState, observation: Observation, settings: RuleSettings = DEFAULT_SETTINGS
) -> tuple[BeliefState, RevisionFacts]:
    """Fold one observation into `state`; return the new state and what the step did."""
    display = display_value(observation.value)
    key = normalize_value(display)
    claimed_at = observation.observed_at.astimezone(UTC)
    r = reliability(
        ceiling=observation.ceiling,
        taint_ceiling=observation.taint_ceiling,
        content_confidence=observation.content_confidence,
        settings=settings,
    )
    if r <= settings.pivot:
        return _apply_sub_pivot(state, display, key, claimed_at, r)
    return _apply_trusted(state, display, key, claimed_at, r, settings)


def claim_order(observations: Iterable[Observation]) -> list[Observation]:
    """Return observations in claim-time order, ties broken by arrival sequence."""
    return sorted(observations, key=lambda o: (o.observed_at, o.sequence))


def fold(
    observations: Iterable[Observation], settings: RuleSettings = DEFAULT_SETTINGS
) -> tuple[BeliefState, list[RevisionFacts]]:
    """Replay observations from a new belief in claim-time order; facts follow that order."""
    state = BeliefState()
    facts: list[RevisionFacts] = []
    for observation in claim_order(observations):
        state, step = apply(state, observation, settings)
        facts.append(step)
    return state, facts


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the memory asserts for a belief, how sure it is, and what it set aside."""

    belief_key: str
    fact: str | None
    # The asserted fact's mass; 0.0 when nothing is asserted.
    probability: float
    # (display value, mass) over S, highest mass first (ties: latest to gain mass first).
    distribution: tuple[tuple[str, float], ...]
    unknown_mass: float
    superseded: tuple[str, ...]
    contested: tuple[str, ...]
    inert: tuple[str, ...]
    entropy_bits: float
    is_uncertain: bool
    observation_count: int
    effective_count: int
    updated_at: datetime | None

    def probability_of(self, value: str) -> float:
        """Return the mass this verdict gives `value` (any spelling); 0.0 when not in S."""
        key = normalize_value(value)
        return next((m for v, m in self.distribution if normalize_value(v) == key), 0.0)

    def to_json(self) -> dict[str, Any]:
        """Return the verdict as stored beside a calibration outcome, in the API's shape.

        VerdictOut's shape, pinned to these fields by tests/test_wire_shapes.py, every field in
        declaration order.
        """
        shape: dict[str, Any] = {"kind": "belief_verdict"}
        for name in _VERDICT_FIELDS:
            value = getattr(self, name)
            if name == "distribution":
                value = dict(value)
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, datetime):
                value = _iso(value)
            shape[name] = value
        return shape


_VERDICT_FIELDS = tuple(f.name for f in fields(Verdict))


def decay_weight(state: BeliefState, settings: RuleSettings, now: datetime) -> float:
    """Return 2^(-Δt/T), Δt the time since the last trusted update; 1.0 when decay is off."""
    half_life = settings.decay_half_life_days
    if half_life is None or state.last_trusted_at is None:
        return 1.0
    if now.utcoffset() is None:
        raise BeliefInputError("now", "now must be a datetime with a time zone")
    # A read stamped before the last trusted claim sees no decay rather than negative decay.
    elapsed_days = max(0.0, (now - state.last_trusted_at).total_seconds() / SECONDS_PER_DAY)
    return 2.0 ** (-elapsed_days / half_life)


def _entropy_bits(masses: list[float]) -> float:
    """The Shannon entropy of a distribution's masses, in bits."""
    entropy = 0.0 - math.fsum(m * math.log2(m) for m in masses if m > 0.0)
    # Rounding can leave a certain belief a hair below zero; entropy never is.
    return max(entropy, 0.0)


def verdict(
    state: BeliefState,
    settings: RuleSettings = DEFAULT_SETTINGS,
    *,
    belief_key: str = "",
    now: datetime | None = None,
) -> Verdict:
    """Read the verdict of `state`, mixing toward UNKNOWN at read time when decay is on.

    `now` matters only with decay on; it defaults to the current time.
    """
    weight = 1.0
    if settings.decay_half_life_days is not None:
        weight = decay_weight(state, settings, datetime.now(UTC) if now is None else now)
    # Decay scales every named mass alike, so their order is the undecayed order.
    ranked = sorted(state.candidates, key=_rank, reverse=True)
    distribution = tuple((c.value, c.mass * weight) for c in ranked)
    unknown = state.unknown_mass * weight + (1.0 - weight)
    fact: str | None = None
    probability = 0.0
    if distribution and distribution[0][1] >= unknown:
        fact, probability = distribution[0]
    entropy = _entropy_bits([m for _, m in distribution] + [unknown])
    return Verdict(
        belief_key=belief_key,
        fact=fact,
        probability=probability,
        distribution=distribution,
        unknown_mass=unknown,
        superseded=tuple(state.display(key) for key in state.superseded),
        contested=tuple(state.display(key) for key in state.contested),
        inert=state.inert,
        entropy_bits=entropy,
        is_uncertain=fact is None or probability < settings.uncertainty_threshold,
        observation_count=state.observation_count,
        effective_count=state.effective_count,
        updated_at=state.updated_at,
    )
