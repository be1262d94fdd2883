"""Worked examples of the belief rule: the numbers a reader of beliefs.md can check by hand."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import pytest

from beliefs.domain.rule import (
    BeliefState,
    Candidate,
    Observation,
    RuleSettings,
    apply,
    fold,
    reliability,
    verdict,
)
from beliefs.domain.tiers import DEFAULT_CEILINGS

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
USER_DIRECT = DEFAULT_CEILINGS["user_direct"]
WEB_FETCH = DEFAULT_CEILINGS["web_fetch"]


def said(value: str, day: float = 0, ceiling: float = USER_DIRECT, **extra: object) -> Observation:
    """An observation `day` days after T0 on a channel with `ceiling`."""
    return Observation(value=value, observed_at=T0 + timedelta(days=day), ceiling=ceiling, **extra)


def test_a_first_trusted_sighting_leaves_p_equal_r() -> None:
    state, (facts,) = fold([said("6 oz per tbsp", content_confidence=0.9)])
    assert facts.reliability == 0.9
    assert state.mass_of("6 oz per tbsp") == 0.9
    assert state.unknown_mass == pytest.approx(0.1, abs=1e-15)
    seen = verdict(state)
    assert (seen.fact, seen.probability) == ("6 oz per tbsp", 0.9)
    assert facts.lifted and facts.floor == 1.0 and facts.prior == 0.0


def test_a_first_trusted_sighting_without_content_confidence_uses_the_default() -> None:
    state, (facts,) = fold([said("oat milk")])
    assert facts.reliability == 0.7
    assert state.unknown_mass == 1.0 - 0.7


def test_re_confirmation_saturates_as_odds_l_to_the_n() -> None:
    r = 0.7
    state = BeliefState()
    for n in range(1, 6):
        state, facts = apply(state, said("oat milk", day=n, content_confidence=r), RuleSettings())
        p = state.mass_of("oat milk")
        assert p / (1 - p) == pytest.approx((r / (1 - r)) ** n, rel=1e-12)
        assert facts.lifted == (n == 1)
    assert state.unknown_mass == pytest.approx(1 - state.mass_of("oat milk"))


def test_a_later_trusted_correction_is_asserted_and_the_old_value_superseded() -> None:
    state, _ = fold([said("6 oz per tbsp"), said("5 oz per tbsp", day=90)])
    seen = verdict(state)
    assert seen.fact == "5 oz per tbsp"
    assert seen.probability == pytest.approx(0.7)
    assert seen.superseded == ("6 oz per tbsp",)
    assert seen.contested == ()


def test_flip_back_asserts_the_first_value_again_and_supersedes_the_second() -> None:
    state, _ = fold([said("A"), said("B", day=1), said("A", day=2)])
    seen = verdict(state)
    assert seen.fact == "A" and seen.probability >= 0.7
    assert seen.superseded == ("B",)


def test_an_untrusted_squatter_gets_no_head_start_but_a_trusted_b_still_wins() -> None:
    state, facts = fold([said("B", ceiling=WEB_FETCH), said("A", day=1), said("B", day=2)])
    assert [f.effective for f in facts] == [False, True, True]
    assert facts[2].prior == 0.0
    seen = verdict(state)
    assert (seen.fact, seen.superseded, seen.inert) == ("B", ("A",), ())


def test_a_sub_pivot_observation_is_recorded_inert_and_moves_nothing() -> None:
    trusted, _ = fold([said("oat milk")])
    state, facts = apply(trusted, said("soy milk", day=1, ceiling=WEB_FETCH), RuleSettings())
    assert state.inert == ("soy milk",)
    assert state.candidates == trusted.candidates
    assert state.unknown_mass == trusted.unknown_mass
    assert (facts.effective, facts.likelihood_ratio, facts.floor, facts.shift) == (False, 1.0, 0.0, 0.0)
    assert (state.observation_count, state.effective_count) == (2, 1)


def test_poison_on_a_low_trust_channel_worded_as_certain_changes_nothing() -> None:
    clean, _ = fold([said("6 oz per tbsp"), said("5 oz per tbsp", day=90)])
    poisoned = clean
    for k in range(50):
        poisoned, _ = apply(
            poisoned,
            said("6 oz per tbsp", day=91 + k, ceiling=WEB_FETCH, content_confidence=1.0),
            RuleSettings(),
        )
    before, after = verdict(clean), verdict(poisoned)
    assert (after.fact, after.probability, after.distribution) == (
        before.fact,
        before.probability,
        before.distribution,
    )


def test_the_hedge_floor_lets_a_hedged_statement_on_a_trusted_channel_move_the_belief() -> None:
    hedged = [said("6 oz per tbsp"), said("5 oz per tbsp", day=90, content_confidence=0.4)]
    state, facts = fold(hedged, RuleSettings(hedge_floor=True))
    assert facts[1].reliability == pytest.approx(0.55)
    seen = verdict(state)
    assert seen.fact == "5 oz per tbsp"
    assert seen.probability == pytest.approx(0.55)
    assert seen.is_uncertain  # 0.55 < θ = 0.6: asserted, but flagged


def test_without_the_hedge_floor_a_hedged_statement_is_inert() -> None:
    hedged = [said("6 oz per tbsp"), said("5 oz per tbsp", day=90, content_confidence=0.4)]
    state, facts = fold(hedged, RuleSettings(hedge_floor=False))
    assert facts[1].reliability == 0.4 and not facts[1].effective
    seen = verdict(state, RuleSettings(hedge_floor=False))
    assert seen.fact == "6 oz per tbsp"
    assert seen.inert == ("5 oz per tbsp",)


def test_the_hedge_floor_never_lifts_a_channel_at_or_below_the_pivot() -> None:
    for ceiling in (0.5, 0.4, 0.3, 0.1):
        assert reliability(ceiling=ceiling, taint_ceiling=None, content_confidence=0.1) == 0.1
        assert reliability(ceiling=ceiling, taint_ceiling=None, content_confidence=1.0) == ceiling


def test_taint_can_only_lower_r() -> None:
    def r(taint: float | None, c: float | None, floor: bool = True) -> float:
        rule = RuleSettings(hedge_floor=floor)
        return reliability(ceiling=USER_DIRECT, taint_ceiling=taint, content_confidence=c, settings=rule)

    assert r(None, 0.9) == 0.9
    assert r(WEB_FETCH, 0.9) == WEB_FETCH
    assert r(0.99, 0.9) == 0.9  # a taint above the channel's ceiling changes nothing
    # The hedge floor replaces c only: a hedge relayed from the web stays at the web's ceiling.
    assert r(WEB_FETCH, 0.2) == WEB_FETCH
    assert r(0.52, 0.2) == 0.52
    assert r(None, 0.2) == pytest.approx(0.55)
    assert r(None, 0.2, floor=False) == 0.2


def test_text_cannot_raise_r_above_the_channel_ceiling() -> None:
    assert reliability(ceiling=WEB_FETCH, taint_ceiling=None, content_confidence=1.0) == WEB_FETCH
    assert reliability(ceiling=0.999, taint_ceiling=None, content_confidence=1.0) == 0.99
    assert reliability(ceiling=0.005, taint_ceiling=None, content_confidence=1.0) == 0.01


def test_volatility_below_one_makes_an_established_belief_resist_a_single_correction() -> None:
    rule = RuleSettings(volatility=0.1)
    state, _ = fold([said("A", content_confidence=0.9), said("A", day=1, content_confidence=0.9)], rule)
    state, facts = apply(state, said("B", day=2, content_confidence=0.9), rule)
    assert facts.floor == 0.1 and facts.lifted
    # Lifted to odds 0.1 then multiplied by L = 9: odds 0.9 against everything else.
    assert facts.posterior == pytest.approx(0.9 / 1.9)
    seen = verdict(state, rule)
    assert seen.fact == "A"
    assert seen.contested == ("B",)
    state, _ = apply(state, said("B", day=3, content_confidence=0.9), rule)
    seen = verdict(state, rule)
    assert seen.fact == "B" and seen.superseded == ("A",) and seen.contested == ()


def test_volatility_keeps_a_first_sighting_at_p_equal_r() -> None:
    rule = RuleSettings(volatility=0.1)
    state, (facts,) = fold([said("A", content_confidence=0.8)], rule)
    assert facts.floor == 1.0
    assert state.mass_of("A") == 0.8


def test_decay_is_off_by_default() -> None:
    state, _ = fold([said("oat milk")])
    years_later = T0 + timedelta(days=3650)
    assert verdict(state, now=years_later) == verdict(state, now=T0)


def test_decay_moves_mass_to_unknown_by_time_since_the_last_trusted_update() -> None:
    rule = RuleSettings(decay_half_life_days=30.0)
    state, _ = fold([said("oat milk", content_confidence=0.8)], rule)
    seen = verdict(state, rule, now=T0 + timedelta(days=30))
    assert seen.probability_of("oat milk") == pytest.approx(0.4)
    assert seen.unknown_mass == pytest.approx(0.6)
    assert (seen.fact, seen.probability, seen.is_uncertain) == (None, 0.0, True)  # U leads
    assert verdict(state, rule, now=T0).probability == 0.8
    assert state.mass_of("oat milk") == 0.8  # read time only: the state is untouched


def test_a_sub_pivot_observation_never_resets_the_decay_clock() -> None:
    rule = RuleSettings(decay_half_life_days=30.0)
    state, _ = fold([said("oat milk", content_confidence=0.8)], rule)
    noisy, _ = apply(state, said("oat milk", day=29, ceiling=WEB_FETCH), rule)
    noisy, _ = apply(noisy, said("soy milk", day=29, ceiling=WEB_FETCH), rule)
    later = T0 + timedelta(days=30)
    assert noisy.last_trusted_at == T0
    assert noisy.updated_at == T0 + timedelta(days=29)
    decayed = verdict(state, rule, now=later).probability_of("oat milk")
    assert decayed == pytest.approx(0.4)
    assert verdict(noisy, rule, now=later).probability_of("oat milk") == decayed
    refreshed, _ = apply(state, said("oat milk", day=29), rule)
    assert verdict(refreshed, rule, now=later).probability_of("oat milk") > 0.85


def test_entropy_excludes_inert_values() -> None:
    state, _ = fold([said("oat milk", content_confidence=0.8)])
    crowded = state
    for k in range(5):
        crowded, _ = apply(crowded, said(f"brand {k}", day=1, ceiling=WEB_FETCH), RuleSettings())
    expected = -(0.8 * math.log2(0.8) + 0.2 * math.log2(0.2))
    assert verdict(state).entropy_bits == pytest.approx(expected)
    assert verdict(crowded).entropy_bits == verdict(state).entropy_bits
    assert verdict(crowded).is_uncertain == verdict(state).is_uncertain
    assert len(verdict(crowded).inert) == 5


def test_a_new_belief_is_all_unknown() -> None:
    seen = verdict(BeliefState(), belief_key="coffee_ratio")
    assert (seen.fact, seen.probability, seen.unknown_mass, seen.entropy_bits) == (None, 0.0, 1.0, 0.0)
    assert seen.is_uncertain and seen.updated_at is None


def test_the_displayed_spelling_is_the_first_trusted_one() -> None:
    state, _ = fold(
        [
            said("OAT   milk", ceiling=WEB_FETCH),
            said("Oat Milk", day=1),
            said("oat milk", day=2),
        ]
    )
    assert verdict(state).fact == "Oat Milk"
    assert state.inert == ()
    assert len(state.candidates) == 1


def test_an_inert_value_keeps_its_first_spelling_and_is_listed_once() -> None:
    state, _ = fold([said("Soy  Milk", ceiling=WEB_FETCH), said("soy milk", day=1, ceiling=WEB_FETCH)])
    assert state.inert == ("Soy Milk",)


def test_equal_masses_are_broken_in_favour_of_the_latest_to_gain_mass() -> None:
    state = BeliefState(
        candidates=(
            Candidate(key="a", value="A", mass=0.4, last_gain=2, has_led=True),
            Candidate(key="b", value="B", mass=0.4, last_gain=5, has_led=True),
        ),
        unknown_mass=0.2,
        superseded=("a",),
        effective_count=5,
    )
    seen = verdict(state)
    assert seen.fact == "B"
    assert [v for v, _ in seen.distribution] == ["B", "A"]


def test_a_named_value_tied_with_unknown_is_still_asserted() -> None:
    state = BeliefState(
        candidates=(Candidate(key="a", value="A", mass=0.5, last_gain=1, has_led=True),),
        unknown_mass=0.5,
        effective_count=1,
    )
    assert verdict(state).fact == "A"


def test_revision_facts_report_the_total_variation_shift() -> None:
    state, facts = fold([said("A", content_confidence=0.8), said("B", day=1, content_confidence=0.8)])
    assert facts[0].shift == pytest.approx(0.8)  # U 1 → 0.2, A 0 → 0.8
    before = {"A": 0.8, "B": 0.0, "U": 0.2}
    after = {"A": state.mass_of("A"), "B": state.mass_of("B"), "U": state.unknown_mass}
    assert facts[1].shift == pytest.approx(0.5 * sum(abs(after[k] - before[k]) for k in before))
    assert facts[1].likelihood_ratio == pytest.approx(4.0)


def test_the_state_round_trips_through_json_exactly() -> None:
    rule = RuleSettings(volatility=0.3)
    log = [
        said("A", content_confidence=0.83),
        said("b", day=1.5, ceiling=WEB_FETCH),
        said("B", day=2.25, content_confidence=0.61),
        said("C", day=3.125, taint_ceiling=0.77),
        said("A", day=4.0625),
    ]
    state, _ = fold(log, rule)
    text = json.dumps(state.to_json())
    restored = BeliefState.from_json(json.loads(text))
    assert restored == state
    assert all(
        a.mass.hex() == b.mass.hex() for a, b in zip(restored.candidates, state.candidates, strict=True)
    )
    assert restored.unknown_mass.hex() == state.unknown_mass.hex()
    assert verdict(restored, rule, now=T0) == verdict(state, rule, now=T0)


def test_a_state_from_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="replaying the revision log"):
        BeliefState.from_json({"format": 99})


def test_the_verdict_dict_has_exactly_the_api_keys() -> None:
    state, _ = fold([said("A"), said("B", day=1), said("c", day=2, ceiling=WEB_FETCH)])
    from atlaso_site.wire import VerdictOut

    body = VerdictOut.model_validate(verdict(state, belief_key="diet:milk")).model_dump()
    assert list(body) == [
        "kind",
        "belief_key",
        "fact",
        "probability",
        "distribution",
        "unknown_mass",
        "superseded",
        "contested",
        "inert",
        "entropy_bits",
        "is_uncertain",
        "observation_count",
        "effective_count",
        "updated_at",
    ]
    assert body["kind"] == "belief_verdict" and body["belief_key"] == "diet:milk"
    assert body["updated_at"] == "2025-03-03T09:00:00.000000+00:00"
    assert list(body["distribution"]) == ["B", "A"]
    assert (body["superseded"], body["inert"]) == (["A"], ["c"])
    assert json.loads(json.dumps(body)) == body


def test_claim_time_not_arrival_decides_which_value_is_asserted() -> None:
    late_arriving_old_claim = said("6 oz", day=0)
    state, _ = fold([said("5 oz", day=90), late_arriving_old_claim])
    assert verdict(state).fact == "5 oz"


def test_equal_claim_times_fall_back_to_arrival_order() -> None:
    first = Observation("A", T0, USER_DIRECT, sequence=1)
    second = Observation("B", T0, USER_DIRECT, sequence=2)
    assert verdict(fold([second, first])[0]).fact == "B"


def test_a_probability_can_be_read_for_any_spelling() -> None:
    state, _ = fold([said("Oat Milk", content_confidence=0.8)])
    seen = verdict(state)
    assert seen.probability_of("  oat   MILK ") == 0.8
    assert seen.probability_of("soy milk") == 0.0


def test_an_observation_without_a_time_zone_is_refused() -> None:
    from beliefs.domain.values import BeliefInputError

    with pytest.raises(BeliefInputError) as caught:
        Observation("A", datetime(2025, 1, 1), USER_DIRECT)
    assert caught.value.field == "observed_at"
