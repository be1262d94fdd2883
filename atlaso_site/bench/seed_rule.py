"""Seed 003's published update rule, re-implemented only so the benchmark can compare it.

Read from the seed's text and the "Known flaws" paragraph of beliefs.md: a new value is
admitted at an entry mass (r for a trusted first sighting, or a fixed mass in the seed's
sweep), a known value is only multiplied by L = r / (1 - r) (clamped to 1 at or below the
pivot) and renormalised, sub-pivot new values sit inert at a negligible mass, entropy counts
inert values, and decay mixes toward uniform over every candidate. Do not use it for beliefs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from beliefs.domain.rule import Observation, RuleSettings, claim_order, reliability
from beliefs.domain.values import clean_value, normalize_value

SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class SeedSettings:
    """The seed rule's knobs; `entry_mass=None` admits a trusted value at mass r."""

    pivot: float = 0.5
    default_content_confidence: float = 0.7
    entry_mass: float | None = None
    # The seed gated admission on the pivot only after its sweep; the sweep admits anything.
    gate_admission: bool = True
    # Our reading of "recorded but inert": a candidate at a negligible mass. 1e-6 reproduces
    # the spec's re-derivation that a later trusted B needs about 8 repeats to win.
    inert_mass: float = 1e-6
    # Uncertain when entropy over log2(K), K counting inert values and U, exceeds this.
    uncertainty_threshold: float = 0.5
    decay_half_life_days: float | None = None

    @classmethod
    def sweep(cls, entry_mass: float) -> SeedSettings:
        """The seed's fixed-entry-mass sweep: every new value enters at `entry_mass`."""
        return cls(entry_mass=entry_mass, gate_admission=False)

    @property
    def label(self) -> str:
        """A short name for tables."""
        if self.entry_mass is None:
            return "seed rule (entry = r)"
        return f"seed sweep (entry {self.entry_mass:.2f})"


DEFAULT_SEED_SETTINGS = SeedSettings()


@dataclass(frozen=True, slots=True)
class SeedCandidate:
    """A candidate in the seed's distribution; inert ones sit there at a negligible mass."""

    key: str
    value: str
    mass: float
    inert: bool
    last_gain: int


@dataclass(frozen=True, slots=True)
class SeedState:
    """The seed's belief: candidates (inert included) and the UNKNOWN mass."""

    candidates: tuple[SeedCandidate, ...] = ()
    unknown_mass: float = 1.0
    observation_count: int = 0
    updated_at: datetime | None = None

    def mass_of(self, value: str) -> float:
        """Return the mass of `value` (any spelling); 0.0 when it is not a candidate."""
        key = normalize_value(value)
        return next((c.mass for c in self.candidates if c.key == key), 0.0)


@dataclass(frozen=True, slots=True)
class SeedFacts:
    """What one observation did under the seed rule."""

    reliability: float
    likelihood_ratio: float
    admitted: bool
    inert: bool
    prior: float
    posterior: float


@dataclass(frozen=True, slots=True)
class SeedVerdict:
    """The seed's verdict: argmax over every candidate and U, uncertainty from entropy."""

    fact: str | None
    probability: float
    distribution: tuple[tuple[str, float], ...]
    unknown_mass: float
    entropy_bits: float
    normalized_entropy: float
    is_uncertain: bool
    observation_count: int


def _renormalised(candidates: list[SeedCandidate], unknown: float) -> tuple[list[SeedCandidate], float]:
    total = math.fsum([*(c.mass for c in candidates), unknown])
    return [replace(c, mass=c.mass / total) for c in candidates], unknown / total


def _entry(r: float, *, trusted: bool, settings: SeedSettings) -> tuple[float, bool]:
    """A new value's entry mass, and whether it enters inert (untrusted, with gated admission)."""
    if trusted or not settings.gate_admission:
        return (r if settings.entry_mass is None else settings.entry_mass), False
    return settings.inert_mass, True


def apply(
    state: SeedState, observation: Observation, settings: SeedSettings = DEFAULT_SEED_SETTINGS
) -> tuple[SeedState, SeedFacts]:
    """Fold one observation into the seed's state."""
    display = clean_value(observation.value)
    key = normalize_value(display)
    claimed_at = observation.observed_at.astimezone(UTC)
    r = reliability(
        ceiling=observation.ceiling,
        taint_ceiling=observation.taint_ceiling,
        content_confidence=observation.content_confidence,
        settings=RuleSettings(
            pivot=settings.pivot,
            default_content_confidence=settings.default_content_confidence,
            hedge_floor=False,
        ),
    )
    trusted = r > settings.pivot
    likelihood_ratio = r / (1.0 - r) if trusted else 1.0
    count = state.observation_count + 1
    candidates = list(state.candidates)
    unknown = state.unknown_mass
    index = next((i for i, c in enumerate(candidates) if c.key == key), None)
    prior = 0.0 if index is None else candidates[index].mass
    admitted = inert = False
    if index is not None:
        # The flaw: a known value is only reweighted, however far behind it is.
        known = candidates[index]
        candidates[index] = replace(
            known,
            mass=known.mass * likelihood_ratio,
            inert=known.inert and not trusted,
            last_gain=count if trusted else known.last_gain,
        )
        candidates, unknown = _renormalised(candidates, unknown)
    else:
        index = len(candidates)
        admitted = True
        entry, inert = _entry(r, trusted=trusted, settings=settings)
        candidates = [replace(c, mass=c.mass * (1.0 - entry)) for c in candidates]
        unknown *= 1.0 - entry
        candidates.append(SeedCandidate(key=key, value=display, mass=entry, inert=inert, last_gain=count))
    new_state = SeedState(
        candidates=tuple(candidates),
        unknown_mass=unknown,
        observation_count=count,
        updated_at=claimed_at if state.updated_at is None else max(state.updated_at, claimed_at),
    )
    return new_state, SeedFacts(
        reliability=r,
        likelihood_ratio=likelihood_ratio,
        admitted=admitted,
        inert=inert,
        prior=prior,
        posterior=candidates[index].mass,
    )


def fold(
    observations: Iterable[Observation], settings: SeedSettings = DEFAULT_SEED_SETTINGS
) -> tuple[SeedState, list[SeedFacts]]:
    """Replay observations from a new belief in claim-time order."""
    state = SeedState()
    facts: list[SeedFacts] = []
    for observation in claim_order(observations):
        state, step = apply(state, observation, settings)
        facts.append(step)
    return state, facts


def _decay_weight(state: SeedState, settings: SeedSettings, now: datetime | None) -> float:
    """2^(-Δt/T) since the last update (1.0 with decay off, or before any update)."""
    if settings.decay_half_life_days is None or state.updated_at is None:
        return 1.0
    moment = datetime.now(UTC) if now is None else now
    elapsed = max(0.0, (moment - state.updated_at).total_seconds() / SECONDS_PER_DAY)
    return 2.0 ** (-elapsed / settings.decay_half_life_days)


def verdict(
    state: SeedState, settings: SeedSettings = DEFAULT_SEED_SETTINGS, *, now: datetime | None = None
) -> SeedVerdict:
    """Read the seed's verdict, decaying toward uniform over all candidates when enabled."""
    size = len(state.candidates) + 1
    weight = _decay_weight(state, settings, now)
    uniform = (1.0 - weight) / size
    ranked = sorted(state.candidates, key=lambda c: (c.mass, c.last_gain), reverse=True)
    distribution = tuple((c.value, c.mass * weight + uniform) for c in ranked)
    unknown = state.unknown_mass * weight + uniform
    fact: str | None = None
    probability = 0.0
    if distribution and distribution[0][1] >= unknown:
        fact, probability = distribution[0]
    masses = [m for _, m in distribution] + [unknown]
    entropy = max(0.0 - math.fsum(m * math.log2(m) for m in masses if m > 0.0), 0.0)
    normalized = entropy / math.log2(size) if size > 1 else 0.0
    return SeedVerdict(
        fact=fact,
        probability=probability,
        distribution=distribution,
        unknown_mass=unknown,
        entropy_bits=entropy,
        normalized_entropy=normalized,
        is_uncertain=fact is None or normalized > settings.uncertainty_threshold,
        observation_count=state.observation_count,
    )
