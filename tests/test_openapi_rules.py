"""The OpenAPI document states the rules the server enforces: the key ones, fast.

schemathesis checks it at length in CI (.ci/schemathesis); these run in the normal suite, so a
regression shows there.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from atlaso_site.lib.user_ids import USER_ID_PATTERN
from atlaso_site.wire import NOT_BLANK, SPACE, stripped_within
from deposits.domain.validation import MAX_CONTENT, DepositValidationError, validate_content
from deposits.models import Deposit

BULK_ITEM_SCHEMAS = ("BulkItemIn", "BulkScopeIn", "BulkBeliefIn")
RULE_KEYWORDS = ("minLength", "maxLength", "pattern", "minimum", "maximum", "minItems", "maxItems")


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    from atlaso_site.api import api

    return api.get_openapi_schema()


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield method.upper(), path, operation


def component(document: dict[str, Any], name: str) -> dict[str, Any]:
    return document["components"]["schemas"][name]


def strings_in(schema: Any, document: dict[str, Any], seen: frozenset[str] = frozenset()) -> Iterator[dict]:
    """Every string schema a request schema holds, through $refs (bulk items left out)."""
    if not isinstance(schema, dict):
        return
    ref = schema.get("$ref", "")
    if ref:
        name = ref.rsplit("/", 1)[-1]
        if name not in seen and name not in BULK_ITEM_SCHEMAS:
            yield from strings_in(component(document, name), document, seen | {name})
        return
    if schema.get("type") == "string":
        yield schema
    for branch in schema.get("anyOf", ()):
        yield from strings_in(branch, document, seen)
    yield from strings_in(schema.get("items"), document, seen)
    for prop in schema.get("properties", {}).values():
        yield from strings_in(prop, document, seen)


def test_every_user_id_path_parameter_states_the_user_id_pattern(document):
    user_ids = [
        parameter
        for _method, path, operation in operations(document)
        for parameter in operation.get("parameters", ())
        if parameter["in"] == "path" and parameter["name"] == "user_id"
    ]
    owner_scoped = [path for _method, path, _operation in operations(document) if "{user_id}" in path]
    assert len(user_ids) == len(owner_scoped) >= 18
    for parameter in user_ids:
        assert parameter["schema"]["pattern"] == USER_ID_PATTERN.pattern


def test_every_string_a_request_sends_states_what_it_may_hold(document):
    # Free text states at least "no NUL"; ids, names and times state their shape.
    checked = 0
    for method, path, operation in operations(document):
        schemas = [parameter["schema"] for parameter in operation.get("parameters", ())]
        body = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
        schemas.append(body.get("schema"))
        for schema in schemas:
            for string in strings_in(schema, document):
                checked += 1
                stated = {"pattern", "enum", "format"} & set(string)
                assert stated, f"{method} {path}: a string states no rule: {string}"
    assert checked > 60


def test_a_claim_time_is_stated_as_a_date_time_string_everywhere(document):
    for name in ("BeliefIn", "BulkBeliefIn", "ObservationIn"):
        observed_at = component(document, name)["properties"]["observed_at"]
        assert {"type": "string", "format": "date-time"} in observed_at["anyOf"], name


def test_bulk_items_state_their_rules_as_prose_because_each_item_is_judged_alone(document):
    for name in BULK_ITEM_SCHEMAS:
        for field, prop in component(document, name)["properties"].items():
            branches = [prop, *prop.get("anyOf", ()), prop.get("items") or {}]
            assert not any(keyword in branch for branch in branches for keyword in RULE_KEYWORDS), field
    content = component(document, "BulkItemIn")["properties"]["content"]
    assert "Checked per item" in content["description"]
    # The whole request's own rules stay rules.
    assert component(document, "BulkIn")["properties"]["items"]["maxItems"] == 1000


def test_every_operation_id_is_unique(document):
    ids = Counter(operation["operationId"] for _method, _path, operation in operations(document))
    assert [name for name, count in ids.items() if count > 1] == []


def test_the_whitespace_the_patterns_name_is_pythons():
    spelled = re.compile(f"[{SPACE}]")
    assert [c for c in map(chr, range(0x110000)) if bool(spelled.match(c)) != c.isspace()] == []


@pytest.mark.parametrize(
    "content",
    ["x", " x ", "\x1f", "\ufeff", "\u3000a\u3000", " " * 9, "a" * MAX_CONTENT, f" {'a' * MAX_CONTENT}\n",
     "a" * (MAX_CONTENT + 1), "a\x00b"],
)  # fmt: skip
def test_the_content_pattern_admits_exactly_what_the_domain_accepts(content):
    try:
        validate_content(content)
        accepted = "\x00" not in content  # NUL is refused before the domain sees it
    except DepositValidationError:
        accepted = False
    assert bool(re.fullmatch(stripped_within(MAX_CONTENT), content)) is accepted


@pytest.mark.parametrize(
    ("value", "blank"), [("x", False), (" \u2003x", False), (" \x1c\t", True), ("", True)]
)
def test_a_belief_value_must_hold_a_character_that_is_not_whitespace(value, blank):
    assert (re.fullmatch(NOT_BLANK, value) is None) is blank


def bulk_item(**belief: Any) -> dict[str, Any]:
    return {
        "content": "ratio",
        "idempotency_key": "ak_t-1",
        "belief": {"key": "ratio", "value": "5", **belief},
    }


@pytest.mark.parametrize("observed_at", [0, 1.5, "1700000000", "2025-06-01", "2025-06-01T09:30:00"])
def test_a_bulk_item_whose_claim_time_is_no_date_time_string_is_refused_whole(api, observed_at):
    answer = api.post("/users/alice/deposits/bulk", {"items": [bulk_item(observed_at=observed_at)]})
    assert answer.status == 422, answer.body
    assert answer.body["error"]["field"] == "items.0.belief.observed_at"
    assert not Deposit.objects.exists()


@pytest.mark.parametrize("observed_at", [0, "1700000000", "0001-01-01T00:00:00+01:00"])
def test_an_observation_whose_claim_time_is_no_storable_date_time_is_a_422(api, observed_at):
    answer = api.post("/users/alice/beliefs/ratio/observations", {"value": "5", "observed_at": observed_at})
    assert answer.status == 422, answer.body
    assert answer.body["error"]["field"] == "observed_at"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scope": {"n": "5"}}, "scope.n"),
        ({"scope": {"seed": True}}, "scope.seed"),
        (
            {"belief": {"key": "ratio", "value": "5", "content_confidence": "0.5"}},
            "belief.content_confidence",
        ),
        ({"belief": {"key": "ratio", "value": "5", "content_confidence": True}}, "belief.content_confidence"),
    ],
)
def test_a_number_sent_as_text_or_a_boolean_is_refused_not_coerced(api, body, field):
    answer = api.post("/users/alice/deposits", {"content": "ratio", **body})
    assert answer.status == 422, answer.body
    assert answer.body["error"]["field"] == field
    assert not Deposit.objects.exists()


def test_a_whole_number_written_with_a_fraction_is_the_integer_json_schema_says_it_is(api):
    answer = api.post("/users/alice/deposits", {"content": "ratio", "scope": {"n": 5.0}})
    assert answer.status == 201, answer.body
    assert answer.body["deposit"]["scope"]["n"] == 5


def test_a_belief_value_is_at_most_500_characters_as_sent(api):
    # The domain counts a value with its whitespace collapsed, which no schema can say; the API
    # counts it as sent, so the stated maxLength is the rule.
    padded = "x" + " " * 500 + "y"
    answer = api.post("/users/alice/beliefs/ratio/observations", {"value": padded})
    assert answer.status == 422, answer.body
    assert answer.body["error"]["field"] == "value"
