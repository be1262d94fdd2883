from __future__ import annotations

import pytest

from deposits.models import Deposit


@pytest.mark.parametrize(
    "body",
    [
        {"content": "a\x00b"},
        {"content": "ok", "scope": {"env": "prod\x00"}},
        {"content": "ok", "tags": ["x\x00"]},
        {"content": "ok", "author": "\x00"},
    ],
)
def test_a_nul_character_anywhere_in_a_write_is_a_422_and_stores_nothing(api, body):
    answer = api.post("/users/alice/deposits", body)
    assert answer.status == 422
    assert answer.body["error"]["code"] == "validation_error"
    assert not Deposit.objects.exists()


def test_a_nul_in_a_query_parameter_is_a_422(api):
    answer = api.get("/users/alice/recall?q=threshold%00")
    assert answer.status == 422 and answer.body["kind"] == "error"


def test_text_that_only_mentions_the_escape_is_stored_as_written(api):
    answer = api.post("/users/alice/deposits", {"content": "the JSON escape \\u0000 means NUL"})
    assert answer.status == 201
    assert answer.body["deposit"]["content"] == "the JSON escape \\u0000 means NUL"
