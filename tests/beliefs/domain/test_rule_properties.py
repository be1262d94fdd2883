"""The Guarantees of beliefs.md, as properties over any candidates, tiers, confidences and times."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import timedelta

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from beliefs.domain.rule import (
    BeliefState,
    Observation,
    RuleSettings,
    apply,
    claim_order,
    fold,
    reliability,
    verdict,
)
from beliefs.domain.values import normalize_value
from tests.beliefs.domain.strategies import (
    BASE_TIME,
    YEAR_SECONDS,
    any_ceiling,
    confidences,
    observations,
    rule_settings,
    sub_pivot_observations,
    trusted_observations,
    values,
    with_sequences,
)

# Well past every generated claim time, so a read with decay on sees real decay.
READ_AT = BASE_TIME + timedelta(seconds=YEAR_SECONDS, days=30)
PROPERTY = settings(max_examples=150, deadline=None)
# Floating point may leave a posterior a few ulps under r; far below anything a reader sees.
ULPS = 1e-12


def _history(draw: st.DrawFn, rule: RuleSettings, max_size: int = 12) -> list[Observation]:
    """A mix of trusted and sub-pivot observations, as any channel might write them."""
    return draw(
        st.lists(
            st.one_of(observations(), trusted_observations(rule), sub_pivot_observations(rule)),
            max_size=max_size,
        )
    )


def _apply_all(state: BeliefState, items: list[Observation], rule: RuleSettings) -> BeliefState:
    for item in items:
        state, _ = apply(state, item, rule)
    return state


def _asserted_fields(state: BeliefState, rule: RuleSettings) -> tuple[object, ...]:
    """The verdict fields guarantee 1 says no sub-pivot observation can move."""
    seen = verdict(state, rule, now=READ_AT)
    return (
        seen.fact,
        seen.probability,
        seen.distribution,
        seen.superseded,
        seen.contested,
        seen.is_uncertain,
        seen.unknown_mass,
        seen.effective_count,
    )


# Guarantee 1 -------------------------------------------------------------------------------


@PROPERTY
@given(data=st.data(), rule=rule_settings())
def test_sub_pivot_observations_appended_to_any_belief_change_nothing_asserted(
    data: st.DataObject, rule: RuleSettings
) -> None:
    state = _apply_all(BeliefState(), _history(data.draw, rule), rule)
    before = _asserted_fields(state, rule)
    known = [c.value for c in state.candidates]
    noise_values = st.one_of(values, st.sampled_from(known)) if known else values
    noise = data.draw(st.lists(noise_values.flatmap(lambda v: sub_pivot_observations(rule, v)), max_size=10))
    after = _apply_all(state, noise, rule)
    assert _asserted_fields(after, rule) == before
    assert after.observation_count == state.observation_count + len(noise)


@PROPERTY
@given(data=st.data(), rule=rule_settings())
def test_sub_pivot_observations_anywhere_in_claim_time_change_nothing_asserted(
    data: st.DataObject, rule: RuleSettings
) -> None:
    trusted = with_sequences(data.draw(st.lists(trusted_observations(rule), max_size=8)))
    noise = with_sequences(data.draw(st.lists(sub_pivot_observations(rule), max_size=8)), start=len(trusted))
    without_noise, _ = fold(trusted, rule)
    with_noise, _ = fold(noise + trusted, rule)
    assert _asserted_fields(with_noise, rule) == _asserted_fields(without_noise, rule)


@PROPERTY
@given(data=st.data(), rule=rule_settings())
def test_a_sub_pivot_observation_reports_no_evidence_and_no_shift(
    data: st.DataObject, rule: RuleSettings
) -> None:
    state = _apply_all(BeliefState(), _history(data.draw, rule), rule)
    _, facts = apply(state, data.draw(sub_pivot_observations(rule)), rule)
    assert not facts.effective
    assert facts.reliability <= rule.pivot
    assert (facts.likelihood_ratio, facts.floor, facts.lifted, facts.shift) == (1.0, 0.0, False, 0.0)
    assert facts.posterior == facts.prior


# Guarantee 2 -------------------------------------------------------------------------------


@PROPERTY
@given(data=st.data(), rule=rule_settings())
def test_a_first_trusted_observation_gives_p_equal_r_and_unknown_one_minus_r(
    data: st.DataObject, rule: RuleSettings
) -> None:
    untrusted_first = data.draw(st.lists(sub_pivot_observations(rule), max_size=5))
    state = _apply_all(BeliefState(), untrusted_first, rule)
    first = data.draw(trusted_observations(rule))
    state, facts = apply(state, first, rule)
    assert facts.effective and facts.prior == 0.0
    assert facts.posterior == facts.reliability
    assert state.mass_of(first.value) == facts.reliability
    assert state.unknown_mass == 1.0 - facts.reliability
    assert verdict(state, rule, now=state.last_trusted_at).probability == facts.reliability


# Guarantee 3 -------------------------------------------------------------------------------


@PROPERTY
@given(data=st.data(), rule=rule_settings(volatility=1.0))
def test_with_rho_one_the_latest_trusted_value_is_asserted_with_p_at_least_r(
    data: st.DataObject, rule: RuleSettings
) -> None:
    state = _apply_all(BeliefState(), _history(data.draw, rule, max_size=20), rule)
    latest = data.draw(trusted_observations(rule))
    state, facts = apply(state, latest, rule)
    seen = verdict(state, rule, now=state.last_trusted_at)
    assert seen.fact is not None
    assert normalize_value(seen.fact) == normalize_value(latest.value)
    assert seen.probability >= facts.reliability - ULPS
    assert seen.probability == facts.posterior


# Guarantee 4 -------------------------------------------------------------------------------


@PROPERTY
@given(
    ceiling=any_ceiling,
    taint=st.one_of(st.none(), any_ceiling),
    confidence=confidences,
    rule=rule_settings(),
)
def test_content_confidence_never_raises_r_above_the_tier_or_taint_ceiling(
    ceiling: float, taint: float | None, confidence: float | None, rule: RuleSettings
) -> None:
    r = reliability(ceiling=ceiling, taint_ceiling=taint, content_confidence=confidence, settings=rule)
    cap = ceiling if taint is None else min(ceiling, taint)
    # 0.01 is the clip that keeps L finite; a ceiling below it cannot push r lower.
    assert r <= max(cap, 0.01)
    assert 0.01 <= r <= 0.99
    certain = reliability(ceiling=ceiling, taint_ceiling=taint, content_confidence=1.0, settings=rule)
    assert r <= certain


@PROPERTY
@given(ceiling=any_ceiling, taint=any_ceiling, confidence=confidences, rule=rule_settings())
def test_taint_can_only_lower_reliability(
    ceiling: float, taint: float, confidence: float | None, rule: RuleSettings
) -> None:
    tainted = reliability(ceiling=ceiling, taint_ceiling=taint, content_confidence=confidence, settings=rule)
    plain = reliability(ceiling=ceiling, taint_ceiling=None, content_confidence=confidence, settings=rule)
    assert tainted <= plain
    if taint <= rule.pivot:
        assert tainted <= rule.pivot


# Guarantee 5 -------------------------------------------------------------------------------


@PROPERTY
@given(data=st.data(), rule=rule_settings(volatility=1.0))
def test_flip_back_trusted_a_b_a_asserts_a_and_supersedes_b(data: st.DataObject, rule: RuleSettings) -> None:
    first = data.draw(values)
    second = data.draw(values.filter(lambda v: normalize_value(v) != normalize_value(first)))
    state = _apply_all(BeliefState(), _history(data.draw, rule), rule)
    for value in (first, second, first):
        noise = data.draw(st.lists(sub_pivot_observations(rule), max_size=3))
        state = _apply_all(state, [*noise, data.draw(trusted_observations(rule, value))], rule)
    seen = verdict(state, rule, now=state.last_trusted_at)
    assert seen.fact is not None and normalize_value(seen.fact) == normalize_value(first)
    superseded = [normalize_value(v) for v in seen.superseded]
    assert superseded[-1] == normalize_value(second)
    assert normalize_value(first) not in superseded


@PROPERTY
@given(data=st.data(), rule=rule_settings(volatility=1.0))
def test_squatting_untrusted_b_then_trusted_a_then_trusted_b_asserts_b(
    data: st.DataObject, rule: RuleSettings
) -> None:
    squatter = data.draw(values)
    state = _apply_all(BeliefState(), _history(data.draw, rule), rule)
    assume(state.candidate(normalize_value(squatter)) is None)
    honest = data.draw(values.filter(lambda v: normalize_value(v) != normalize_value(squatter)))
    squats = data.draw(st.lists(sub_pivot_observations(rule, squatter), min_size=1, max_size=8))
    state = _apply_all(state, squats, rule)
    state = _apply_all(state, [data.draw(trusted_observations(rule, honest))], rule)
    state, facts = apply(state, data.draw(trusted_observations(rule, squatter)), rule)
    seen = verdict(state, rule, now=state.last_trusted_at)
    assert seen.fact is not None and normalize_value(seen.fact) == normalize_value(squatter)
    assert facts.prior == 0.0  # being inert carried no mass
    assert normalize_value(squatter) not in [normalize_value(v) for v in seen.inert]
    assert normalize_value(seen.superseded[-1]) == normalize_value(honest)


# Guarantee 6 -------------------------------------------------------------------------------


@PROPERTY
@given(data=st.data(), rule=rule_settings())
def test_replaying_the_log_gives_exactly_the_stored_state(data: st.DataObject, rule: RuleSettings) -> None:
    log = with_sequences(_history(data.draw, rule, max_size=20))
    stored = BeliefState()
    stored_facts = []
    for item in claim_order(log):
        # What the service does: load the stored JSON, apply, store the JSON again.
        loaded = BeliefState.from_json(json.loads(json.dumps(stored.to_json())))
        stored, facts = apply(loaded, item, rule)
        stored_facts.append(facts)
    replayed, replayed_facts = fold(log, rule)
    assert replayed == stored
    assert replayed.to_json() == stored.to_json()
    assert replayed_facts == stored_facts


@PROPERTY
@given(data=st.data(), rule=rule_settings())
def test_claims_arriving_out_of_order_give_the_state_of_claim_time_order(
    data: st.DataObject, rule: RuleSettings
) -> None:
    claims = with_sequences(_history(data.draw, rule, max_size=20))
    in_claim_order = claim_order(claims)
    arrival = data.draw(st.permutations(claims))
    assert fold(arrival, rule) == fold(in_claim_order, rule)
    incremental = _apply_all(BeliefState(), in_claim_order, rule)
    assert fold(arrival, rule)[0] == incremental


@PROPERTY
@given(data=st.data(), rule=rule_settings())
def test_distinct_claim_times_make_arrival_order_irrelevant(data: st.DataObject, rule: RuleSettings) -> None:
    claims = _history(data.draw, rule, max_size=15)
    claims = [replace(c, observed_at=BASE_TIME + timedelta(seconds=i)) for i, c in enumerate(claims)]
    shuffled = data.draw(st.permutations(claims))
    # Arrival sequence follows the shuffled order, as the log would record it.
    assert fold(with_sequences(shuffled), rule) == fold(with_sequences(claims), rule)


# Invariants behind the verdict ---------------------------------------------------------------


@PROPERTY
@given(data=st.data(), rule=rule_settings())
def test_every_state_is_a_distribution_with_consistent_bookkeeping(
    data: st.DataObject, rule: RuleSettings
) -> None:
    state = BeliefState()
    for item in _history(data.draw, rule, max_size=25):
        before = state
        state, facts = apply(state, item, rule)
        assert 0.0 <= facts.shift <= 1.0 + ULPS
        if facts.effective:
            assert facts.likelihood_ratio == facts.reliability / (1.0 - facts.reliability)
        else:
            assert state.candidates == before.candidates
            assert state.unknown_mass == before.unknown_mass
    masses = [c.mass for c in state.candidates] + [state.unknown_mass]
    assert all(m >= 0.0 for m in masses)
    assert math.isclose(math.fsum(masses), 1.0, abs_tol=1e-9)
    keys = {c.key for c in state.candidates}
    leader = state.leader
    superseded, contested = set(state.superseded), set(state.contested)
    assert not superseded & contested
    led = {leader.key} if leader is not None else set()
    assert superseded | contested | led == keys
    assert not led & (superseded | contested)
    assert not keys & {normalize_value(v) for v in state.inert}
    assert len(state.superseded) == len(superseded)


@PROPERTY
@given(data=st.data(), rule=rule_settings())
def test_the_state_round_trips_through_json_exactly(data: st.DataObject, rule: RuleSettings) -> None:
    state = _apply_all(BeliefState(), _history(data.draw, rule, max_size=20), rule)
    text = json.dumps(state.to_json())
    assert BeliefState.from_json(json.loads(text)) == state
    assert json.dumps(BeliefState.from_json(json.loads(text)).to_json()) == text


@PROPERTY
@given(data=st.data(), rule=rule_settings())
def test_entropy_counts_only_named_values_and_unknown(data: st.DataObject, rule: RuleSettings) -> None:
    state = _apply_all(BeliefState(), _history(data.draw, rule, max_size=20), rule)
    seen = verdict(state, rule, now=READ_AT)
    masses = [m for _, m in seen.distribution] + [seen.unknown_mass]
    expected = -math.fsum(m * math.log2(m) for m in masses if m > 0.0)
    assert math.isclose(seen.entropy_bits, max(expected, 0.0), abs_tol=1e-12)
    assert seen.entropy_bits <= math.log2(len(masses)) + 1e-9
