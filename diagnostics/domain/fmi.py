"""The Field Maturity Index: four pillars, their geometric mean, and a plain-English verdict."""

from __future__ import annotations

from dataclasses import dataclass

HEALTHY = 70
USABLE = 40
GOOD_PILLAR = 0.7

# (sentence when the pillar is good, sentence when it is the problem)
PILLAR_SENTENCES: dict[str, tuple[str, str]] = {
    "coverage": (
        "Searches are returning confident answers.",
        "Few searches return a confident answer; corroborate what agents ask about.",
    ),
    "precision": (
        "Bags agree with themselves.",
        "Many bags are split between polarities; review them and resolve the disagreements.",
    ),
    "resolution": (
        "Conflicts are being resolved.",
        "Most conflicts are unresolved; resolve them with contradicting deposits.",
    ),
    "density": (
        "Most claims are corroborated.",
        "Most bags hold a single deposit; corroborate claims so they can become confident.",
    ),
}


@dataclass(frozen=True, slots=True)
class Pillars:
    coverage: float
    precision: float
    resolution: float
    density: float

    @property
    def fmi(self) -> int:
        """100 × (C·P·R·D)^(1/4), rounded: one weak pillar pulls the whole score down."""
        product = self.coverage * self.precision * self.resolution * self.density
        return round(100 * product**0.25) if product > 0 else 0

    @property
    def weakest(self) -> str:
        values = {
            "coverage": self.coverage,
            "precision": self.precision,
            "resolution": self.resolution,
            "density": self.density,
        }
        return min(values, key=lambda name: values[name])


@dataclass(frozen=True, slots=True)
class FieldCounts:
    """What the four pillars are computed from, for one owner or for every owner pooled."""

    recalls: int = 0
    confident_recalls: int = 0
    live_bags: int = 0
    singleton_bags: int = 0
    # Bags that are not thin evidence, and the sum of their agreement scores.
    multi_bags: int = 0
    agreement_sum: float = 0.0
    # Bags once split between sides (superseded claims included), and those of them corrected.
    split_bags: int = 0
    resolved_bags: int = 0

    def pillars(self) -> Pillars:
        """Coverage, precision, resolution, density; a pillar with nothing to judge is neutral."""
        return Pillars(
            coverage=self.confident_recalls / self.recalls if self.recalls else 0.0,
            precision=self.agreement_sum / self.multi_bags if self.multi_bags else 1.0,
            resolution=self.resolved_bags / self.split_bags if self.split_bags else 1.0,
            density=1 - self.singleton_bags / self.live_bags if self.live_bags else 0.0,
        )


def band(fmi: int) -> str:
    if fmi >= HEALTHY:
        return "healthy"
    return "usable" if fmi >= USABLE else "unreliable"


def explain(pillars: Pillars, *, deposit_count: int) -> str:
    """`"Memory is healthy (FMI 72/100). Searches are returning confident answers."`."""
    fmi = pillars.fmi
    head = f"Memory is {band(fmi)} (FMI {fmi}/100)."
    if deposit_count == 0:
        return f"{head} Nothing is stored yet; add deposits to build it."
    weakest = pillars.weakest
    good, bad = PILLAR_SENTENCES[weakest]
    if getattr(pillars, weakest) >= GOOD_PILLAR:
        return f"{head} {good}"
    if fmi >= HEALTHY:
        # Healthy overall, one pillar behind: said as the exception it is, not as a contradiction.
        return f"{head} Its weakest pillar, {weakest}, lags: {bad[0].lower()}{bad[1:]}"
    return f"{head} {bad}"


@dataclass(frozen=True, slots=True)
class Diagnostics:
    pillars: Pillars
    window_days: int
    deposit_count: int

    @property
    def fmi(self) -> int:
        return self.pillars.fmi

    def explain(self) -> str:
        return explain(self.pillars, deposit_count=self.deposit_count)
