"""The seed's published rule, re-derived, so the benchmark compares against what it says."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from atlaso_site.bench import seed_rule
from atlaso_site.bench.seed_rule import SeedSettings, SeedState
from beliefs.domain import rule
from beliefs.domain.rule import Observation
from beliefs.domain.tiers import DEFAULT_CEILINGS

T0 = datetime(2025, 3, 1, tzinfo=UTC)
USER_DIRECT = DEFAULT_CEILINGS["user_direct"]
WEB_FETCH = DEFAULT_CEILINGS["web_fetch"]


def said(value: str, day: float, ceiling: float = USER_DIRECT, c: float = 0.9) -> Observation:
    return Observation(value, T0 + timedelta(days=day), ceiling, content_confidence=c)


def test_the_seed_admits_a_first_trusted_sighting_at_p_equal_r() -> None:
    state, (facts,) = seed_rule.fold([said("A", 0)])
    assert facts.admitted and state.mass_of("A") == 0.9
    assert state.unknown_mass == pytest.approx(0.1)


def test_the_seed_leaves_b_asserted_after_trusted_a_b_a() -> None:
    state, _ = seed_rule.fold([said("A", 0), said("B", 1), said("A", 2)])
    seen = seed_rule.verdict(state)
    assert seen.fact == "B"
    assert state.mass_of("B") == pytest.approx(0.52, abs=0.005)
    assert state.mass_of("A") == pytest.approx(0.47, abs=0.005)
    ours, _ = rule.fold([said("A", 0), said("B", 1), said("A", 2)])
    assert rule.verdict(ours).fact == "A"


def test_the_seed_makes_a_trusted_b_need_about_eight_repeats_after_an_untrusted_b() -> None:
    state, _ = seed_rule.fold([said("B", 0, WEB_FETCH, c=0.95), said("A", 1)])
    repeats = 0
    while seed_rule.verdict(state).fact != "B":
        repeats += 1
        state, _ = seed_rule.apply(state, said("B", 1 + repeats), SeedSettings())
    assert repeats == 8


def test_the_seed_lets_five_inert_values_flip_is_uncertain_from_true_to_false() -> None:
    state, _ = seed_rule.fold([said("A", 0, c=0.58)])
    assert seed_rule.verdict(state).is_uncertain
    for k in range(5):
        state, facts = seed_rule.apply(state, said(f"X{k}", 1, WEB_FETCH), SeedSettings())
        assert facts.inert
    assert not seed_rule.verdict(state).is_uncertain
    ours, _ = rule.fold([said("A", 0, c=0.58), *(said(f"X{k}", 1, WEB_FETCH) for k in range(5))])
    assert rule.verdict(ours).is_uncertain


def test_the_seed_decay_hands_each_inert_value_about_one_kth_of_the_mass() -> None:
    settings = SeedSettings(decay_half_life_days=30.0)
    state, _ = seed_rule.fold([said("A", 0), *(said(f"X{k}", 0, WEB_FETCH) for k in range(3))], settings)
    seen = seed_rule.verdict(state, settings, now=T0 + timedelta(days=3000))
    size = 5  # A, three inert values and U
    assert dict(seen.distribution)["X0"] == pytest.approx(1 / size, abs=1e-6)


def test_the_seed_clamps_l_to_one_for_a_known_value_at_or_below_the_pivot() -> None:
    state, _ = seed_rule.fold([said("A", 0), said("B", 1)])
    after, facts = seed_rule.apply(state, said("A", 2, WEB_FETCH, c=1.0), SeedSettings())
    assert facts.likelihood_ratio == 1.0
    assert after.candidates == state.candidates


def test_the_seed_sweep_admits_any_new_value_at_the_fixed_entry_mass() -> None:
    settings = SeedSettings.sweep(0.4)
    state, _ = seed_rule.fold([said("A", 0), said("Z", 1, WEB_FETCH)], settings)
    assert state.mass_of("Z") == pytest.approx(0.4)
    assert state.mass_of("A") == pytest.approx(0.4 * 0.6)
    assert seed_rule.verdict(state, settings).fact == "Z"


def test_a_new_seed_belief_is_all_unknown() -> None:
    seen = seed_rule.verdict(SeedState())
    assert (seen.fact, seen.unknown_mass, seen.is_uncertain) == (None, 1.0, True)
