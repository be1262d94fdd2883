"""Validation of what a client sends: each rule, its boundary, and the message that teaches the fix."""

from __future__ import annotations

import pytest

from deposits.domain.validation import (
    DepositValidationError,
    enum_message,
    validate_bulk,
    validate_deposit,
    validate_enum,
    validate_reason,
    validate_user_id,
)

# Copied from seed 000: the exact form a bad polarity must answer with.
POLARITY_MESSAGE = """polarity must be one of:
  "positive"   — claim that X works / is true
  "negative"   — claim that X doesn't work / failed
  "cautionary" — claim with caveats
  "open"       — note or open question"""

ENUM_MESSAGES = {
    "polarity": POLARITY_MESSAGE,
    "evidence_grade": """evidence_grade must be one of:
  "anecdotal"  — one person, one observation, no logs
  "observed"   — measured at least once with artifacts
  "replicated" — multiple independent observations agree
  "verified"   — replicated and recorded with provenance""",
    "repro_status": """repro_status must be one of:
  "unreplicated" — nobody has tried to reproduce it yet
  "replicated"   — someone reproduced it
  "failed_repro" — a reproduction was tried and failed""",
    "mode": """mode must be one of:
  "soft" — mark retracted, keep readable for audit, drop from recall and bag counts
  "hard" — erase the row, its index entry and its edges (GDPR; needs the erase permission)""",
    "on_gate_reject": """on_gate_reject must be one of:
  "skip"  — commit every item that passes, report the others
  "abort" — commit nothing when any item fails""",
}
ALLOWED = {
    "polarity": ["positive", "negative", "cautionary", "open"],
    "evidence_grade": ["anecdotal", "observed", "replicated", "verified"],
    "repro_status": ["unreplicated", "replicated", "failed_repro"],
    "mode": ["soft", "hard"],
    "on_gate_reject": ["skip", "abort"],
}


def error_for(data: dict, user_id: str = "alice") -> DepositValidationError:
    with pytest.raises(DepositValidationError) as caught:
        validate_deposit(user_id, {"content": "a claim", **data})
    return caught.value


def test_it_states_the_polarity_rule_exactly_as_seed_000_does():
    error = error_for({"polarity": "strong"})
    assert error.field == "polarity"
    assert error.message == POLARITY_MESSAGE
    assert error.allowed == ALLOWED["polarity"]


@pytest.mark.parametrize("field", sorted(ENUM_MESSAGES))
@pytest.mark.parametrize("bad", ["strong", "", "Positive", 3, ["open"]])
def test_it_lists_every_allowed_value_with_its_meaning_for_each_enum(field, bad):
    with pytest.raises(DepositValidationError) as caught:
        validate_enum(field, bad)
    assert caught.value.field == field
    assert caught.value.message == ENUM_MESSAGES[field] == enum_message(field)
    assert caught.value.allowed == ALLOWED[field]


@pytest.mark.parametrize("field", ["evidence_grade", "repro_status"])
def test_it_rejects_a_bad_enum_value_in_a_deposit_with_that_enums_message(field):
    error = error_for({field: "certain"})
    assert (error.field, error.message, error.allowed) == (field, ENUM_MESSAGES[field], ALLOWED[field])


def test_it_defaults_the_enums_when_they_are_left_out():
    draft = validate_deposit("alice", {"content": "a note"})
    assert (draft.polarity, draft.evidence_grade, draft.repro_status) == ("open", "anecdotal", "unreplicated")


@pytest.mark.parametrize("content", [None, "", "   \n\t ", 5, ["a claim"]])
def test_it_rejects_empty_or_non_text_content(content):
    error = error_for({"content": content})
    assert error.field == "content"
    assert error.message == (
        'content must be a non-empty claim in plain words, e.g. "Threshold 0.7 over-flags in production"'
    )


def test_it_rejects_content_one_character_over_the_limit():
    error = error_for({"content": "x" * 8001})
    assert error.field == "content"
    assert error.message == (
        "content is 8001 characters; the limit is 8000. Split it into separate claims, or keep the "
        "detail in an artifact and list it in artifact_refs."
    )


def test_it_accepts_content_at_the_limit_once_stripped():
    assert validate_deposit("alice", {"content": "  " + "x" * 8000 + "\n"}).content == "x" * 8000


@pytest.mark.parametrize("user_id", ["alice", "0", "tenant-a:alice", "a.b_c-d:e@f", "A" * 128, "42"])
def test_it_accepts_a_user_id_that_fits_the_pattern(user_id):
    assert validate_user_id(user_id) == user_id


@pytest.mark.parametrize(
    "user_id",
    ["", "-alice", "_alice", ":alice", "A" * 129, "al ice", "alice/x", "ålice", "alice\n", None, 5],
)
def test_it_rejects_a_user_id_outside_the_pattern(user_id):
    with pytest.raises(DepositValidationError) as caught:
        validate_user_id(user_id)
    assert caught.value.field == "user_id"
    assert caught.value.message == (
        "user_id must be 1..128 characters of letters, digits and _ . : @ -, starting with a letter "
        'or digit (e.g. "alice" or "tenant-a:alice")'
    )


@pytest.mark.parametrize("facet", ["model", "dataset", "env", "version"])
@pytest.mark.parametrize("value", ["", "x" * 201, 5, ["gpt-5"]])
def test_it_rejects_a_text_facet_that_is_empty_too_long_or_not_text(facet, value):
    error = error_for({"scope": {facet: value}})
    assert error.field == f"scope.{facet}"
    assert error.message == (
        f"scope.{facet} must be a string of 1..200 characters, or left out "
        "(an empty string would make a different bag from no value at all)"
    )


@pytest.mark.parametrize("facet", ["model", "dataset", "env", "version"])
def test_it_accepts_a_text_facet_of_one_to_two_hundred_characters(facet):
    assert getattr(validate_deposit("a", {"content": "c", "scope": {facet: "x"}}).scope, facet) == "x"
    assert (
        getattr(validate_deposit("a", {"content": "c", "scope": {facet: "x" * 200}}).scope, facet)
        == "x" * 200
    )


@pytest.mark.parametrize("facet", ["n", "seed"])
@pytest.mark.parametrize("value", [True, "3", 3.0, 2**63, -(2**63) - 1, 2**70])
def test_it_rejects_a_number_facet_that_is_not_a_64_bit_whole_number(facet, value):
    error = error_for({"scope": {facet: value}})
    assert error.field == f"scope.{facet}"
    assert error.message == f"scope.{facet} must be a whole number (64-bit), or left out"


@pytest.mark.parametrize("facet", ["n", "seed"])
@pytest.mark.parametrize("value", [0, -1, 2**63 - 1, -(2**63)])
def test_it_accepts_a_number_facet_within_64_bits(facet, value):
    assert getattr(validate_deposit("a", {"content": "c", "scope": {facet: value}}).scope, facet) == value


def test_it_rejects_a_note_over_two_thousand_characters():
    assert validate_deposit("a", {"content": "c", "scope": {"note": "x" * 2000}}).scope.note == "x" * 2000
    error = error_for({"scope": {"note": "x" * 2001}})
    assert (error.field, error.message) == (
        "scope.note",
        "scope.note must be a string of at most 2000 characters",
    )


def test_it_rejects_a_facet_it_does_not_know_and_names_the_real_ones():
    error = error_for({"scope": {"model": "m", "temperature": 0.2}})
    assert error.field == "scope.temperature"
    assert error.message == (
        "scope has no facet 'temperature'; the facets are model, dataset, env, version, n, seed, "
        "and note for free text"
    )


@pytest.mark.parametrize("scope", ["gpt-5", ["model"], 3])
def test_it_rejects_a_scope_that_is_not_an_object(scope):
    error = error_for({"scope": scope})
    assert error.field == "scope"
    assert error.message == "scope must be an object with any of model, dataset, env, version, n, seed, note"


@pytest.mark.parametrize(("field", "max_len"), [("tags", 64), ("artifact_refs", 512)])
def test_it_accepts_a_list_at_its_limits(field, max_len):
    values = ["x" * max_len] * 32
    assert getattr(validate_deposit("a", {"content": "c", field: values}), field) == tuple(values)


@pytest.mark.parametrize("field", ["tags", "artifact_refs"])
def test_it_rejects_a_list_of_more_than_thirty_two_entries(field):
    error = error_for({field: [f"t{i}" for i in range(33)]})
    assert (error.field, error.message) == (field, f"{field} has 33 entries; at most 32 are allowed")


@pytest.mark.parametrize(("field", "max_len"), [("tags", 64), ("artifact_refs", 512)])
@pytest.mark.parametrize("too_long", [False, True])
def test_it_rejects_a_list_entry_that_is_empty_or_too_long(field, max_len, too_long):
    entry = "x" * (max_len + 1) if too_long else ""
    error = error_for({field: ["ok", entry]})
    assert error.field == field
    assert error.message == f"each entry of {field} must be 1..{max_len} characters; one is {len(entry)}"


@pytest.mark.parametrize("field", ["tags", "artifact_refs", "contradicts"])
@pytest.mark.parametrize("value", ["a-tag", ["ok", 5], {"a": 1}])
def test_it_rejects_a_list_field_that_is_not_a_list_of_strings(field, value):
    error = error_for({field: value})
    assert (error.field, error.message) == (field, f"{field} must be a list of strings")


def test_it_accepts_up_to_one_hundred_contradicted_ids():
    ids = [f"{i:08d}-0000-4000-8000-000000000000" for i in range(100)]
    assert validate_deposit("a", {"content": "c", "contradicts": ids}).contradicts == tuple(ids)


def test_it_drops_a_repeated_contradicted_id_keeping_the_first_order():
    ids = ["id-b", "id-a", "id-b"]
    assert validate_deposit("a", {"content": "c", "contradicts": ids}).contradicts == ("id-b", "id-a")


def test_it_rejects_more_than_one_hundred_contradicted_ids():
    error = error_for({"contradicts": [f"id-{i}" for i in range(101)]})
    assert (error.field, error.message) == (
        "contradicts",
        "contradicts has 101 entries; at most 100 are allowed",
    )


@pytest.mark.parametrize("field", ["author", "author_role", "task_id"])
def test_it_limits_provenance_strings_to_two_hundred_characters(field):
    assert getattr(validate_deposit("a", {"content": "c", field: "x" * 200}), field) == "x" * 200
    error = error_for({field: "x" * 201})
    assert (error.field, error.message) == (
        field,
        f"{field} is 201 characters; the limit is 200. Shorten it.",
    )


@pytest.mark.parametrize("reason", [None, "", "   ", 7])
def test_it_requires_a_reason_for_a_contradiction(reason):
    with pytest.raises(DepositValidationError) as caught:
        validate_reason(reason)
    assert caught.value.field == "reason"
    assert caught.value.message == (
        "reason is required: say why the earlier deposits no longer hold "
        '(e.g. "re-measured on the fixed eval set")'
    )


def test_it_limits_a_reason_to_two_thousand_characters_once_stripped():
    assert validate_reason("  " + "r" * 2000 + "  ") == "r" * 2000
    with pytest.raises(DepositValidationError) as caught:
        validate_reason("r" * 2001)
    assert (caught.value.field, caught.value.message) == (
        "reason",
        "reason is 2001 characters; the limit is 2000.",
    )


def test_a_bulk_refuses_only_the_item_that_holds_unstorable_text():
    items = [{"content": f"claim {i}", "idempotency_key": f"k{i}"} for i in range(3)]
    items[1]["scope"] = {"env": "prod\x00"}
    bulk = validate_bulk("alice", items)
    assert [item.error is None for item in bulk.items] == [True, False, True]
    assert bulk.items[1].error.details["field"] == "scope.env"
