"""Hypothesis strategies for belief observations: any candidates, tiers, confidences, times."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

from beliefs.domain.rule import Observation, RuleSettings, reliability
from beliefs.domain.tiers import DEFAULT_CEILINGS

BASE_TIME = datetime(2024, 1, 1, tzinfo=UTC)
YEAR_SECONDS = 366 * 86_400
POOL = ("oat milk", "soy milk", "almond milk", "black", "5 oz per tbsp", "cold brew", "none")


def _spellings(value: str) -> st.SearchStrategy[str]:
    return st.sampled_from([value, value.upper(), value.title(), f"  {value}\t", value.replace(" ", "   ")])


# A small pool (so values recur under different spellings) plus free text (any count).
values = st.one_of(
    st.sampled_from(POOL).flatmap(_spellings),
    st.text(alphabet="abcXYZ 09-", min_size=1, max_size=6).filter(lambda s: s.strip()),
)
times = st.integers(0, YEAR_SECONDS).map(lambda s: BASE_TIME + timedelta(seconds=s))
any_ceiling = st.one_of(st.sampled_from(sorted(DEFAULT_CEILINGS.values())), st.floats(0.001, 0.999))
high_ceiling = st.one_of(
    st.sampled_from([c for c in DEFAULT_CEILINGS.values() if c > 0.5]), st.floats(0.501, 0.999)
)
low_ceiling = st.one_of(
    st.sampled_from([c for c in DEFAULT_CEILINGS.values() if c <= 0.5]), st.floats(0.001, 0.5)
)
confidences = st.one_of(st.none(), st.floats(0.0, 1.0))


def rule_settings(*, volatility: float | None = None) -> st.SearchStrategy[RuleSettings]:
    """Settings with random hedge floor, decay and (unless pinned) volatility ρ."""
    return st.builds(
        RuleSettings,
        hedge_floor=st.booleans(),
        volatility=st.just(volatility) if volatility is not None else st.floats(0.05, 1.0),
        decay_half_life_days=st.one_of(st.none(), st.floats(0.5, 365.0)),
    )


@st.composite
def observations(draw: st.DrawFn, value: str | None = None) -> Observation:
    """Any observation: random channel ceiling, optional taint and content confidence."""
    return Observation(
        value=draw(values) if value is None else value,
        observed_at=draw(times),
        ceiling=draw(any_ceiling),
        taint_ceiling=draw(st.one_of(st.none(), any_ceiling)),
        content_confidence=draw(confidences),
    )


@st.composite
def trusted_observations(draw: st.DrawFn, settings: RuleSettings, value: str | None = None) -> Observation:
    """An observation whose reliability is above the pivot under `settings`."""
    ceiling = draw(high_ceiling)
    taint = draw(st.one_of(st.none(), high_ceiling))
    confidence = draw(st.one_of(st.none(), st.floats(0.501, 1.0), st.floats(0.0, 1.0)))
    observation = Observation(
        value=draw(values) if value is None else value,
        observed_at=draw(times),
        ceiling=ceiling,
        taint_ceiling=taint,
        content_confidence=confidence,
    )
    r = reliability(ceiling=ceiling, taint_ceiling=taint, content_confidence=confidence, settings=settings)
    if r <= settings.pivot:
        # Only a hedged c with the floor off lands here; keep the channel and drop the hedge.
        observation = replace(observation, content_confidence=None)
    return observation


@st.composite
def sub_pivot_observations(draw: st.DrawFn, settings: RuleSettings, value: str | None = None) -> Observation:
    """An observation at or below the pivot: low channel, low taint, or (floor off) low c."""
    modes = ["low channel", "low taint"] + ([] if settings.hedge_floor else ["low text"])
    mode = draw(st.sampled_from(modes))
    ceiling = draw(low_ceiling if mode == "low channel" else any_ceiling)
    taint = draw(low_ceiling if mode == "low taint" else st.one_of(st.none(), any_ceiling))
    confidence = draw(st.floats(0.0, 0.5) if mode == "low text" else confidences)
    return Observation(
        value=draw(values) if value is None else value,
        observed_at=draw(times),
        ceiling=ceiling,
        taint_ceiling=taint,
        content_confidence=confidence,
    )


def with_sequences(items: list[Observation], start: int = 0) -> list[Observation]:
    """Return copies of `items` whose arrival sequence is their position (from `start`)."""
    return [replace(o, sequence=start + i) for i, o in enumerate(items)]
