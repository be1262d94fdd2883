"""Belief keys and values: the comparison form and the errors that teach the fix."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from beliefs.domain.values import (
    BeliefInputError,
    clean_belief_key,
    clean_ceiling,
    clean_content_confidence,
    clean_observed_at,
    clean_value,
    normalize_value,
)

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def test_normalize_value_collapses_whitespace_strips_and_casefolds() -> None:
    assert normalize_value("  5 OZ\tper\n\ntbsp ") == "5 oz per tbsp"
    assert normalize_value("Straße") == normalize_value("STRASSE")


def test_clean_value_keeps_the_spelling_and_collapses_whitespace() -> None:
    assert clean_value("  Oat   Milk ") == "Oat Milk"


@pytest.mark.parametrize("value", ["", "   ", "\n\t"])
def test_an_empty_value_is_refused_with_an_example(value: str) -> None:
    with pytest.raises(BeliefInputError) as caught:
        clean_value(value)
    assert caught.value.field == "value"
    assert "5 oz per tbsp" in caught.value.message


def test_a_value_is_measured_after_collapsing_whitespace() -> None:
    assert len(clean_value("a" + " " * 1000 + "b")) == 3
    assert clean_value("x" * 500) == "x" * 500
    with pytest.raises(BeliefInputError, match="501 characters") as caught:
        clean_value("x" * 501)
    assert "deposit" in caught.value.message


def test_a_value_that_is_not_text_is_refused() -> None:
    with pytest.raises(BeliefInputError, match="not int"):
        clean_value(5)


@pytest.mark.parametrize("key", ["coffee_ratio", "diet:milk", "a", "0.v-2", "a" * 128])
def test_valid_belief_keys_pass_unchanged(key: str) -> None:
    assert clean_belief_key(key) == key


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("", "it is empty"),
        ("Coffee", "starts with 'C'"),
        ("_coffee", "starts with '_'"),
        ("coffee ratio", "contains ' '"),
        ("coffee/ratio", "contains '/'"),
        ("a" * 129, "129 characters long"),
        ("coffee\n", "contains '\\n'"),
    ],
)
def test_an_invalid_belief_key_is_refused_with_the_rule_and_an_example(key: str, problem: str) -> None:
    with pytest.raises(BeliefInputError) as caught:
        clean_belief_key(key)
    assert caught.value.field == "key"
    assert problem in caught.value.message
    assert "coffee_ratio" in caught.value.message


def test_content_confidence_must_be_a_number_from_zero_to_one() -> None:
    assert clean_content_confidence(None) is None
    assert clean_content_confidence(1) == 1.0
    for bad in (-0.1, 1.01, float("nan"), True, "0.5"):
        with pytest.raises(BeliefInputError) as caught:
            clean_content_confidence(bad)
        assert caught.value.field == "content_confidence"


def test_a_ceiling_is_strictly_between_zero_and_one() -> None:
    assert clean_ceiling("ceiling", 0.98) == 0.98
    for bad in (0, 1, 1.5):
        with pytest.raises(BeliefInputError, match="strictly between 0 and 1"):
            clean_ceiling("ceiling", bad)


def test_a_claim_time_may_be_up_to_five_minutes_ahead_but_not_more() -> None:
    assert clean_observed_at(NOW + timedelta(minutes=5), now=NOW) == NOW + timedelta(minutes=5)
    with pytest.raises(BeliefInputError, match="more than five minutes in the future"):
        clean_observed_at(NOW + timedelta(minutes=5, seconds=1), now=NOW)


def test_a_claim_time_without_a_time_zone_is_refused() -> None:
    with pytest.raises(BeliefInputError, match="no time zone") as caught:
        clean_observed_at(datetime(2025, 6, 1, 12, 0), now=NOW)
    assert caught.value.field == "observed_at"
