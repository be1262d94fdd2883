"""Text no database can store is a 422 naming the field wherever it enters.

A lone surrogate or NUL, in the body, the query, the path or a header; in a bulk it fails only its
own item.
"""

from __future__ import annotations

import json

import pytest

from beliefs.models import BeliefRevision
from deposits.domain.validation import DepositValidationError, validate_deposit
from deposits.models import Deposit
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

SURROGATE = "a\ud800b"


def _refused(answer, field: str) -> None:
    assert answer.status == 422, answer.body
    assert (answer.body["kind"], answer.body["error"]["code"]) == ("error", "validation_error")
    assert answer.body["error"]["field"] == field


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": SURROGATE}, "content"),
        ({"content": "ok", "scope": {"env": SURROGATE}}, "scope.env"),
        ({"content": "ok", "scope": {"note": "\udfff"}}, "scope.note"),
        ({"content": "ok", "tags": ["fine", SURROGATE]}, "tags.1"),
        ({"content": "ok", "author": SURROGATE}, "author"),
        ({"content": "ok", "belief": {"key": "k", "value": SURROGATE}}, "belief.value"),
        ({"content": "ok", "idempotency_key": SURROGATE}, "idempotency_key"),
        ({"content": "ok", "scope": {SURROGATE: "x"}}, "scope"),
    ],
)
def test_a_lone_surrogate_in_a_deposit_is_a_422_naming_the_field_and_stores_nothing(api, body, field):
    _refused(api.post("/users/alice/deposits", body), field)
    assert not Deposit.objects.exists()


def test_a_surrogate_sent_as_raw_utf8_bytes_is_refused_too(api):
    body = b'{"content": "a\xed\xa0\x80b"}'
    _refused(api.call("POST", "/users/alice/deposits", raw=body), "content")


def test_a_whole_surrogate_pair_is_one_character_and_is_stored(api):
    answer = api.post("/users/alice/deposits", {"content": "ship it \ud83d\ude80"})
    assert answer.status == 201
    assert answer.body["deposit"]["content"] == "ship it \U0001f680"


def test_a_lone_surrogate_in_a_correction_reason_is_a_422(api):
    old = api.post("/users/alice/deposits", {"content": "threshold 0.7"}).body["deposit"]["id"]
    answer = api.post(
        "/users/alice/contradict", {"content": "threshold 0.8", "contradicts": [old], "reason": SURROGATE}
    )
    _refused(answer, "reason")
    assert Deposit.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [({"value": SURROGATE}, "value"), ({"value": "x", "source_id": "s\udc00"}, "source_id")],
)
def test_a_lone_surrogate_in_a_belief_observation_is_a_422(api, body, field):
    _refused(api.post("/users/alice/beliefs/diet/observations", body), field)
    assert not BeliefRevision.objects.exists()


@pytest.mark.parametrize("value", [SURROGATE, "k\x00"])
def test_an_unstorable_idempotency_key_header_is_a_422(api, value):
    answer = api.post("/users/alice/deposits", {"content": "ok"}, headers={"Idempotency-Key": value})
    _refused(answer, "Idempotency-Key")
    assert not Deposit.objects.exists()


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("q=a%ED%A0%80b", "q"),  # the UTF-8 form of a lone surrogate
        ("q=a%FFb", "q"),  # a byte that is no UTF-8 at all
        ("q=x&env=prod%ED%B0%80", "env"),
        ("q=x&%ED%A0%80=1", "query"),
    ],
)
def test_a_query_parameter_that_is_not_text_is_a_422_naming_it(api, query, field):
    _refused(api.get(f"/users/alice/recall?{query}"), field)


@pytest.mark.parametrize(
    "path",
    [
        "/users/a%ED%A0%80b/deposits",
        "/users/alice/beliefs/a%ED%A0%80b",
        "/users/alice/beliefs/a%ED%A0%80b/revisions",
        "/users/alice/recall%FF?q=x",
    ],
)
def test_a_path_parameter_that_is_not_text_is_a_422(api, path):
    _refused(api.get(path), "path")


def test_authentication_comes_before_judging_the_body(db):
    answer = ApiClient(None).post("/users/alice/deposits", {"content": SURROGATE})
    assert (answer.status, answer.body["error"]["code"]) == (401, "unauthorized")


def _bulk(*contents_or_items):
    items = []
    for index, entry in enumerate(contents_or_items):
        item = entry if isinstance(entry, dict) else {"content": entry}
        items.append({"idempotency_key": f"item-{index}", **item})
    return {"items": items}


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"content": SURROGATE}, "content"),
        ({"content": "a\x00b"}, "content"),
        ({"content": "ok", "scope": {"model": "gpt\ud800"}}, "scope.model"),
        ({"content": "ok", "belief": {"key": "diet", "value": "\x00"}}, "belief.value"),
        ({"content": "ok", "idempotency_key": "key\udfff"}, "idempotency_key"),
        ({"content": "ok", "artifact_refs": ["s3://\ud800"]}, "artifact_refs.0"),
    ],
)
def test_a_bulk_reports_the_unstorable_item_and_commits_the_others(api, bad, field):
    answer = api.post("/users/alice/deposits/bulk", _bulk("first claim", bad, "third claim"))
    assert answer.status == 200
    assert [d["content"] for d in answer.body["committed"]] == ["first claim", "third claim"]
    (failure,) = answer.body["failed"]
    assert failure["index"] == 1
    assert (failure["error"]["code"], failure["error"]["field"]) == ("validation_error", field)
    assert answer.body["is_partial"] is True
    assert sorted(Deposit.objects.values_list("content", flat=True)) == ["first claim", "third claim"]


def test_a_bulk_echoes_the_refused_item_as_json_a_client_can_read(api):
    answer = api.post("/users/alice/deposits/bulk", _bulk("fine", SURROGATE))
    raw = answer.headers.content.decode("ascii")  # every non-ASCII character travels escaped
    assert json.loads(raw)["failed"][0]["item"]["content"] == SURROGATE


def test_an_aborting_bulk_with_an_unstorable_item_commits_nothing(api):
    body = {**_bulk("fine", SURROGATE), "on_gate_reject": "abort"}
    answer = api.post("/users/alice/deposits/bulk", body)
    assert (answer.status, answer.body["committed"], len(answer.body["failed"])) == (200, [], 1)
    assert not Deposit.objects.exists()


def test_the_bulk_envelope_outside_the_items_is_still_judged_whole(api):
    answer = api.post("/users/alice/deposits/bulk", {**_bulk("fine"), "on_gate_reject": "skip\x00"})
    assert answer.status == 422
    assert not Deposit.objects.exists()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"content": SURROGATE}, "content"),
        ({"content": "ok", "scope": {"version": "\x00"}}, "scope.version"),
        ({"content": "ok", "contradicts": ["\udc80"]}, "contradicts.0"),
    ],
)
def test_the_deposit_rules_refuse_unstorable_text_for_every_caller(data, field):
    with pytest.raises(DepositValidationError) as refused:
        validate_deposit("alice", data)
    assert refused.value.field == field
