"""One error envelope for every failure, declared on every operation; no request gets a 500."""

from __future__ import annotations

import json
import uuid
from unittest import mock

import pytest
from django.db import InterfaceError, OperationalError
from django.test import Client

from deposits.models import Deposit
from tests.conftest import ApiClient, make_client

POLARITY_MESSAGE = """polarity must be one of:
  "positive"   — claim that X works / is true
  "negative"   — claim that X doesn't work / failed
  "cautionary" — claim with caveats
  "open"       — note or open question"""


def is_envelope(body: bytes) -> bool:
    """True when `body` is the API's error envelope."""
    try:
        data = json.loads(body)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("kind") == "error" and "code" in data.get("error", {})


def error_of(answer, status: int, code: str) -> dict:
    assert answer.status == status, answer.body
    assert answer.body["kind"] == "error"
    assert is_envelope(answer.headers.content)
    error = answer.body["error"]
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    return error


def test_a_bad_enum_is_a_validation_error_naming_the_field_and_the_allowed_values(api):
    error = error_of(
        api.post("/users/alice/deposits", {"content": "x", "polarity": "strong"}), 422, "validation_error"
    )
    assert error["field"] == "polarity"
    assert error["allowed"] == ["positive", "negative", "cautionary", "open"]
    assert error["message"] == POLARITY_MESSAGE


@pytest.mark.parametrize(
    ("path", "body", "field", "allowed"),
    [
        (
            "/users/alice/deposits",
            {"content": "x", "evidence_grade": "great"},
            "evidence_grade",
            ["anecdotal", "observed", "replicated", "verified"],
        ),
        (
            "/users/alice/deposits",
            {"content": "x", "repro_status": "maybe"},
            "repro_status",
            ["unreplicated", "replicated", "failed_repro"],
        ),
        (
            "/users/alice/deposits/bulk",
            {"items": [{"content": "x", "polarity": "y", "idempotency_key": "k"}]},
            "items.0.polarity",
            ["positive", "negative", "cautionary", "open"],
        ),
    ],
)
def test_every_enum_in_a_body_lists_its_allowed_values(api, path, body, field, allowed):
    error = error_of(api.post(path, body), 422, "validation_error")
    assert (error["field"], error["allowed"]) == (field, allowed)


def test_a_bad_retract_mode_lists_the_modes(api):
    error = error_of(api.delete(f"/users/alice/deposits/{uuid.uuid4()}?mode=shred"), 422, "validation_error")
    assert (error["field"], error["allowed"]) == ("mode", ["soft", "hard"])


def test_a_bad_recall_mode_lists_recalls_modes_not_a_retractions(api):
    error = error_of(api.get("/users/alice/recall?q=milk&mode=semantic"), 422, "validation_error")
    assert (error["field"], error["allowed"]) == ("mode", ["words", "meaning", "hybrid"])
    assert error["message"].startswith("mode must be one of:\n")
    assert '"meaning"' in error["message"] and "soft" not in error["message"]


def test_a_gate_rejection_carries_its_gate_reason(api):
    error = error_of(
        api.post("/users/alice/deposits", {"content": "x", "polarity": "cautionary"}), 422, "gate_rejected"
    )
    assert error["gate_reason"] == (
        "cautionary/broad claim requires provenance (artifact_refs, env= or version=); "
        "add an artifact_ref or set scope env= or version="
    )
    assert error["gate_reason"] in error["message"]


def test_missing_contradicts_carries_the_missing_ids(api):
    error = error_of(
        api.post("/users/alice/deposits", {"content": "x", "contradicts": ["gone"]}),
        422,
        "missing_contradicts",
    )
    assert error["missing"] == ["gone"]


def test_an_idempotency_conflict_carries_the_key_and_the_existing_id(api):
    first = api.post("/users/alice/deposits", {"content": "a", "idempotency_key": "k"}).body["deposit"]["id"]
    error = error_of(
        api.post("/users/alice/deposits", {"content": "b", "idempotency_key": "k"}),
        409,
        "idempotency_conflict",
    )
    assert (error["idempotency_key"], error["existing_id"]) == ("k", first)


def test_an_update_is_immutable_405(api):
    error_of(api.call("PATCH", f"/users/alice/deposits/{uuid.uuid4()}", {"content": "x"}), 405, "immutable")


def test_an_unknown_deposit_is_not_found_404(api):
    error_of(api.get(f"/users/alice/deposits/{uuid.uuid4()}"), 404, "not_found")


def test_no_key_is_unauthorized_401(db):
    error_of(ApiClient(None).get("/users/alice/deposits"), 401, "unauthorized")


def test_a_missing_permission_is_forbidden_403(db):
    reader = make_client(channel="reader", perms=("read",))
    error_of(reader.post("/users/alice/deposits", {"content": "x"}), 403, "forbidden")


@pytest.mark.parametrize(
    "failure", [OperationalError("connection refused"), InterfaceError("connection already closed")]
)
def test_a_database_outage_is_unavailable_503_with_a_retry_hint(api, failure):
    # The first thing a request asks the database: its key.
    with mock.patch("atlaso_site.access.api_keys.key_by_secret_hash", side_effect=failure):
        answer = api.get("/users/alice/deposits")
    error_of(answer, 503, "unavailable")
    assert answer.headers["Retry-After"] == "5"


def test_a_database_outage_during_a_write_is_unavailable_503_and_writes_nothing(api):
    with mock.patch(
        "deposits.services.deposits.bags_add_deposits",
        side_effect=OperationalError("server closed the connection"),
    ):
        answer = api.post("/users/alice/deposits", {"content": "x", "idempotency_key": "k"})
    error_of(answer, 503, "unavailable")
    assert not Deposit.objects.exists()


@pytest.mark.parametrize("raw", ["{bad json", '{"content": "x",}', "\x00", "{"])
def test_a_body_that_is_not_json_is_a_422_envelope(api, raw):
    error = error_of(api.call("POST", "/users/alice/deposits", raw=raw), 422, "validation_error")
    assert error["field"] == "body"


@pytest.mark.parametrize("raw", ['["content"]', '"content"', "5", "null", ""])
def test_json_that_is_not_an_object_is_a_422_envelope(api, raw):
    error_of(api.call("POST", "/users/alice/deposits", raw=raw), 422, "validation_error")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": 5}, "content"),
        ({"content": None}, "content"),
        ({}, "content"),
        ({"content": "x", "scope": "x"}, "scope"),
        ({"content": "x", "scope": {"colour": "red"}}, "scope.colour"),
        ({"content": "x", "tags": "x"}, "tags"),
        ({"content": "x", "tags": [1]}, "tags.0"),
        ({"content": "x", "scope": {"n": "abc"}}, "scope.n"),
        ({"content": "x", "scope": {"n": 2**70}}, "scope.n"),
        ({"content": "x", "scope": {"seed": 1.5}}, "scope.seed"),
        ({"content": "x", "contradicts": "id"}, "contradicts"),
        ({"content": "x", "idempotency_key": 7}, "idempotency_key"),
        ({"content": "x", "colour": "red"}, "colour"),
    ],
)
def test_a_field_of_the_wrong_type_is_a_422_naming_it(api, body, field):
    error = error_of(api.post("/users/alice/deposits", body), 422, "validation_error")
    assert error["field"] == field
    assert not Deposit.objects.exists()


def test_wrong_types_in_a_query_are_a_422(api):
    for query in ("limit=abc", "offset=-1", "include_retracted=perhaps", f"limit={2**70}"):
        error_of(api.get(f"/users/alice/deposits?{query}"), 422, "validation_error")


def test_an_unknown_path_under_the_api_is_a_404_envelope(api):
    for path in ("/nothing-here", "/users/alice/nothing", "/users/alice/deposits/1/2/3"):
        error_of(api.get(path), 404, "not_found")


def test_an_unsupported_method_is_a_405_envelope(api):
    answer = api.delete("/users/alice/deposits")
    error_of(answer, 405, "method_not_allowed")
    assert "GET" in answer.headers["Allow"]
    error_of(api.call("PUT", "/users/alice/deposits/bulk", {}), 405, "method_not_allowed")


def test_no_malformed_request_gets_a_500(api):
    deposit = api.post("/users/alice/deposits", {"content": "x"}).body["deposit"]["id"]
    strange = [
        ("GET", "/users/alice/deposits/%00", None),
        ("GET", f"/users/alice/deposits?offset={2**70}", None),
        ("GET", "/users/" + "a" * 5000 + "/deposits", None),
        ("DELETE", f"/users/alice/deposits/{deposit}?reason=" + "r" * 2001, None),
        ("POST", "/users/alice/deposits", {"content": "x" * 100_000}),
        ("POST", "/users/alice/deposits", {"content": "x", "scope": {"model": "m" * 10_000}}),
        ("POST", "/users/alice/deposits", {"content": "x", "contradicts": ["x" * 65]}),
        ("POST", "/users/alice/deposits/bulk", {"items": "many"}),
        ("POST", "/users/alice/deposits/bulk", {"items": [None]}),
        ("POST", "/users/alice/contradict", {"content": "x", "contradicts": [deposit] * 101, "reason": "r"}),
        ("POST", "/users/alice/contradict", {"content": "x", "contradicts": [], "reason": "r"}),
    ]
    for method, path, body in strange:
        answer = api.call(method, path, body)
        assert 400 <= answer.status < 500, (method, path[:80], answer.status, answer.body)
        assert answer.body["kind"] == "error"


def test_the_openapi_schema_declares_the_envelope_on_every_operation(db):
    schema = Client().get("/api/v1/openapi.json").json()
    error_ref = "#/components/schemas/ErrorOut"
    envelope = schema["components"]["schemas"]["ErrorOut"]
    assert {"kind", "error"} <= set(envelope["properties"])
    operations = [(path, method, op) for path, ops in schema["paths"].items() for method, op in ops.items()]
    assert len(operations) >= 8
    for path, method, op in operations:
        for status in ("401", "403", "422", "503"):
            declared = op["responses"].get(status)
            assert declared is not None, (method, path, status)
            assert declared["content"]["application/json"]["schema"]["$ref"] == error_ref


def test_the_openapi_schema_declares_each_operations_own_error_statuses(db):
    paths = Client().get("/api/v1/openapi.json").json()["paths"]
    assert "409" in paths["/api/v1/users/{user_id}/deposits"]["post"]["responses"]
    assert "409" in paths["/api/v1/users/{user_id}/contradict"]["post"]["responses"]
    assert "404" in paths["/api/v1/users/{user_id}/deposits/{deposit_id}"]["get"]["responses"]
    assert "404" in paths["/api/v1/users/{user_id}/deposits/{deposit_id}"]["delete"]["responses"]
    assert "405" in paths["/api/v1/users/{user_id}/deposits/{deposit_id}"]["put"]["responses"]
