"""Transport faults with httpx.MockTransport: what is retried, how often, after which waits.

And that a retried write carries the same idempotency key, so it lands once. Only the network
is replaced; the sleep is injected, so the waits are read, not slept.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from atlaso import (
    AddItem,
    AsyncMemory,
    ConnectError,
    InputValidationError,
    Memory,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RequestTimeoutError,
    Scope,
    ServerError,
)

DEPOSIT = {
    "kind": "deposit",
    "id": "7e3a1b2c-0000-4000-8000-000000000001",
    "content": "Alice prefers oat milk",
    "polarity": "open",
    "evidence_grade": "anecdotal",
    "scope": {
        "model": None,
        "dataset": None,
        "env": None,
        "version": None,
        "n": None,
        "seed": None,
        "note": None,
    },
    "user_id": "alice",
    "tags": [],
    "contradicts": [],
    "artifact_refs": [],
    "created_at": "2026-05-11T14:23:00.123456+00:00",
    "author": None,
    "author_role": None,
    "repro_status": "unreplicated",
    "task_id": None,
    "channel": "agent",
    "belief": None,
}
ADDED = {"kind": "add_result", "deposit": DEPOSIT, "is_idempotent_replay": False}
HEALTH = {"kind": "diagnostics", "fmi": 72, "coverage": 0.5, "precision": 1.0, "resolution": 1.0,
          "density": 0.7, "window_days": 30, "deposit_count": 4, "explain": "Memory is healthy."}  # fmt: skip


def envelope(code: str, message: str = "try later") -> dict[str, Any]:
    return {"kind": "error", "error": {"code": code, "message": message}}


class Script:
    """Answers requests in order from a list: a response (status, body, headers) or an exception."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        status, body, *headers = answer
        return httpx.Response(status, json=body, headers=headers[0] if headers else None)

    @property
    def keys(self) -> list[str | None]:
        return [r.headers.get("idempotency-key") for r in self.requests]


def memory(script: Script, *, jitter: float = 0.0, **options: Any) -> tuple[Memory, list[float]]:
    waits: list[float] = []
    m = Memory(
        api_key="atl_test", base_url="http://atlaso.test", transport=httpx.MockTransport(script), **options
    )
    m._sleep = waits.append
    m._random = lambda: jitter
    return m, waits


def test_503_with_retry_after_waits_that_long_and_the_retry_sends_the_same_key():
    script = Script((503, envelope("unavailable"), {"Retry-After": "5"}), (201, ADDED))
    m, waits = memory(script)
    result = m.for_user("alice").add("Alice prefers oat milk")
    assert result.id == DEPOSIT["id"]
    assert waits == [5.0]
    assert len(script.requests) == 2
    assert script.keys[0] is not None and script.keys[0].startswith("ak_")
    assert script.keys[0] == script.keys[1]
    assert script.requests[0].content == script.requests[1].content


def test_a_callers_key_is_the_one_sent_on_every_attempt():
    script = Script((502, envelope("bad_gateway")), (201, ADDED))
    m, _ = memory(script)
    m.for_user("alice").add("Alice prefers oat milk", idempotency_key="ak_mine")
    assert script.keys == ["ak_mine", "ak_mine"]


def test_two_calls_with_the_same_text_get_two_keys():
    script = Script((201, ADDED))
    m, _ = memory(script)
    user = m.for_user("alice")
    user.add("Alice prefers oat milk")
    user.add("Alice prefers oat milk")
    assert script.keys[0] != script.keys[1]


def test_429_without_retry_after_backs_off_exponentially_then_raises_after_max_retries():
    script = Script((429, envelope("rate_limited", "slow down")))
    m, waits = memory(script)
    with pytest.raises(RateLimitError) as raised:
        m.for_user("alice").health()
    assert len(script.requests) == 3  # the call and max_retries=2 retries
    assert waits == [0.5, 1.0]
    assert raised.value.retry_after is None
    assert raised.value.status_code == 429


def test_429_exposes_retry_after_when_it_gives_up():
    script = Script((429, envelope("rate_limited"), {"Retry-After": "1.5"}))
    m, waits = memory(script, max_retries=1)
    with pytest.raises(RateLimitError) as raised:
        m.for_user("alice").health()
    assert waits == [1.5]
    assert raised.value.retry_after == 1.5


def test_retry_after_as_an_http_date_is_honoured():
    when = email.utils.formatdate(time.time() + 3, usegmt=True)
    script = Script((503, envelope("unavailable"), {"Retry-After": when}), (200, HEALTH))
    m, waits = memory(script)
    m.for_user("alice").health()
    assert len(waits) == 1 and 1.0 <= waits[0] <= 3.0


def test_a_retry_after_beyond_a_minute_is_not_waited_for():
    script = Script((503, envelope("unavailable"), {"Retry-After": "3600"}))
    m, waits = memory(script)
    with pytest.raises(ServerError):
        m.for_user("alice").health()
    assert waits == [] and len(script.requests) == 1


def test_jitter_shortens_each_wait_by_up_to_a_quarter():
    script = Script((500, envelope("internal_error")))
    m, waits = memory(script, jitter=1.0, max_retries=4)
    with pytest.raises(ServerError):
        m.for_user("alice").health()
    assert waits == [0.375, 0.75, 1.5, 3.0]


def test_the_backoff_is_capped():
    script = Script((500, envelope("internal_error")))
    m, waits = memory(script, max_retries=7)
    with pytest.raises(ServerError):
        m.for_user("alice").health()
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


@pytest.mark.parametrize(
    "fault", [httpx.ConnectError("refused"), httpx.ReadError("connection reset by peer"),
              httpx.RemoteProtocolError("server disconnected")],
    ids=["refused", "reset", "disconnected"],
)  # fmt: skip
def test_a_lost_connection_is_retried_and_the_write_keeps_its_key(fault: Exception):
    script = Script(fault, fault, (201, ADDED))
    m, waits = memory(script)
    assert m.for_user("alice").add("Alice prefers oat milk").id == DEPOSIT["id"]
    assert waits == [0.5, 1.0]
    assert len(set(script.keys)) == 1


def test_connection_errors_past_max_retries_raise_connect_error_with_the_cause():
    script = Script(httpx.ConnectError("refused"))
    m, _ = memory(script)
    with pytest.raises(ConnectError) as raised:
        m.for_user("alice").recall("milk")
    assert isinstance(raised.value.__cause__, httpx.ConnectError)
    assert "http://atlaso.test/api/v1/users/alice/recall" in str(raised.value)
    assert len(script.requests) == 3


def test_timeouts_are_retried_then_raise_request_timeout_error():
    script = Script(httpx.ReadTimeout("timed out"))
    m, waits = memory(script)
    with pytest.raises(RequestTimeoutError):
        m.for_user("alice").recall("milk")
    assert len(script.requests) == 3 and waits == [0.5, 1.0]


@pytest.mark.parametrize(
    ("status", "code", "error"),
    [(404, "not_found", NotFoundError), (403, "forbidden", PermissionDeniedError),
     (422, "validation_error", InputValidationError)],
)  # fmt: skip
def test_client_errors_are_not_retried(status: int, code: str, error: type[Exception]):
    script = Script((status, envelope(code, "no")))
    m, waits = memory(script)
    with pytest.raises(error):
        m.for_user("alice").get("7e3a1b2c-0000-4000-8000-000000000001")
    assert len(script.requests) == 1 and waits == []


@pytest.mark.parametrize(
    "call",
    [lambda user: user.retract("7e3a1b2c-0000-4000-8000-000000000001", reason="wrong"),
     lambda user: user.observe("drink", "tea")],
    ids=["retract", "observe"],
)  # fmt: skip
def test_a_write_without_an_idempotency_key_is_not_retried(call: Callable[[Any], Any]):
    script = Script((503, envelope("unavailable"), {"Retry-After": "1"}))
    m, waits = memory(script)
    with pytest.raises(ServerError):
        call(m.for_user("alice"))
    assert len(script.requests) == 1 and waits == []


def test_a_bulk_is_retried_whole_since_each_item_carries_its_key():
    answer = {"kind": "add_many_result", "committed": [DEPOSIT], "duplicates": [], "failed": [],
              "is_partial": False, "total": 1, "all_succeeded": True}  # fmt: skip
    script = Script(httpx.ReadError("reset"), (200, answer))
    m, _ = memory(script)
    result = m.for_user("alice").add_many([{"content": "Alice prefers oat milk", "idempotency_key": "ak_1"}])
    assert len(result.committed) == 1
    assert script.requests[0].content == script.requests[1].content


def test_max_retries_zero_sends_once():
    script = Script((503, envelope("unavailable")))
    m, waits = memory(script, max_retries=0)
    with pytest.raises(ServerError):
        m.for_user("alice").health()
    assert len(script.requests) == 1 and waits == []


def test_each_retry_is_logged_on_the_atlaso_logger(caplog: pytest.LogCaptureFixture):
    script = Script((503, envelope("unavailable", "the database is unavailable; retry later")), (200, HEALTH))
    m, _ = memory(script)
    with caplog.at_level(logging.INFO, logger="atlaso"):
        m.for_user("alice").health()
    (record,) = [r for r in caplog.records if r.name == "atlaso"]
    assert "retrying GET /users/alice/health in 0.50 s (retry 1 of 2)" in record.getMessage()
    assert "the database is unavailable" in record.getMessage()


def test_the_async_client_retries_the_same_way_with_the_same_key():
    script = Script(
        (503, envelope("unavailable"), {"Retry-After": "2"}), httpx.ReadError("reset"), (201, ADDED)
    )
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def main() -> str:
        async with AsyncMemory(
            api_key="atl_test", base_url="http://atlaso.test", transport=httpx.MockTransport(script)
        ) as m:
            m._sleep = sleep
            m._random = lambda: 0.0
            return (await m.for_user("alice").add("Alice prefers oat milk")).id

    assert asyncio.run(main()) == DEPOSIT["id"]
    assert waits == [2.0, 1.0]
    assert len(script.requests) == 3 and len(set(script.keys)) == 1


def test_a_success_that_is_not_the_apis_answer_is_an_api_status_error_not_a_key_error():
    from atlaso import APIStatusError

    script = Script((200, {"hello": "proxy"}))
    m, _ = memory(script)
    with pytest.raises(APIStatusError, match="is not one this client can read"):
        m.for_user("alice").health()
    html = Memory(api_key="k", base_url="http://atlaso.test",
                  transport=httpx.MockTransport(lambda r: httpx.Response(200, text="<html>login</html>")))  # fmt: skip
    with pytest.raises(APIStatusError, match="is ATLASO_BASE_URL an Atlaso server"):
        html.for_user("alice").health()


@pytest.mark.parametrize(
    ("call", "field"),
    [(lambda u: u.add_many("not a list"), "items"), (lambda u: u.add_many([42]), "items.0"),
     (lambda u: u.add("x", scope="prod"), "scope"), (lambda u: u.recall("x", scope={"region": "eu"}), "scope"),
     (lambda u: u.recall("x", limit=0), "limit"), (lambda u: u.recall("   "), "query"),
     (lambda u: u.add_many([{"content": "x"}]), "items.0.idempotency_key")],
)  # fmt: skip
def test_wrong_arguments_are_refused_before_sending_naming_the_field(call: Callable[[Any], Any], field: str):
    script = Script((200, {}))
    m, _ = memory(script)
    with pytest.raises(InputValidationError) as raised:
        call(m.for_user("alice"))
    assert raised.value.field == field
    assert script.requests == []


def test_a_write_that_was_never_sent_is_retried_even_without_a_key():
    script = Script(httpx.ConnectError("refused"), (200, {"kind": "retract_result", "deposit_id": "d", "mode": "soft",
                                                          "contradicts_preserved": []}))  # fmt: skip
    m, waits = memory(script)
    assert m.for_user("alice").retract("d", reason="wrong").mode == "soft"
    assert waits == [0.5]


def test_a_write_cut_off_after_sending_is_not_retried_without_a_key():
    script = Script(httpx.ReadError("reset"))
    m, waits = memory(script)
    with pytest.raises(ConnectError):
        m.for_user("alice").retract("d", reason="wrong")
    assert len(script.requests) == 1 and waits == []


@pytest.mark.parametrize("user_id", [None, 5, "", ".", "..", "a/b", "tenant a", "x" * 129])
def test_a_bad_user_id_is_refused_before_sending(user_id):
    script = Script((200, HEALTH))
    m, _ = memory(script)
    with pytest.raises(InputValidationError) as raised:
        m.for_user(user_id)  # type: ignore[arg-type]
    assert raised.value.field == "user_id"
    with pytest.raises(InputValidationError):
        m.health(user_id=user_id)  # type: ignore[arg-type]
    assert script.requests == []


def test_text_made_only_of_invisible_characters_is_refused_as_empty():
    script = Script((201, ADDED))
    m, _ = memory(script)
    with pytest.raises(InputValidationError, match="content must be non-empty"):
        m.for_user("alice").add("\u200b\u200d\ufeff ")
    assert script.requests == []


def test_bulk_items_are_read_by_name_and_normalised_before_sending():
    answer = {"kind": "add_many_result", "committed": [], "duplicates": [], "failed": [], "is_partial": False,
              "total": 0, "all_succeeded": True}  # fmt: skip
    script = Script((200, answer))
    m, _ = memory(script)
    user = m.for_user("alice")
    with pytest.raises(InputValidationError, match="no field 'polarty'") as typo:
        user.add_many([{"content": "x", "idempotency_key": "k", "polarty": "negative"}])
    assert typo.value.field == "items.0.polarty"
    rows = [AddItem(content=f"r{n}", idempotency_key=f"k{n}") for n in range(1500)]
    rows[1200] = AddItem(content="bad", idempotency_key="kb", polarity="strong")  # type: ignore[arg-type]
    with pytest.raises(InputValidationError) as bad:
        user.add_many(rows)
    assert bad.value.field == "items.1200.polarity"
    assert script.requests == []  # nothing was sent, so nothing of the first 1,000 is stored

    user.add_many([{"content": "x", "idempotency_key": "k", "tags": "threshold", "scope": {"env": "prod"},
                    "belief": {"key": "milk", "value": "oat"}},
                   AddItem(content="y", idempotency_key="k2", scope={"model": "m"}, tags="t")])  # type: ignore[arg-type]  # fmt: skip
    sent = json.loads(script.requests[0].content)["items"]
    assert sent[0] == {"content": "x", "idempotency_key": "k", "polarity": "open", "evidence_grade": "anecdotal",
                       "scope": {"env": "prod"}, "tags": ["threshold"], "belief": {"key": "milk", "value": "oat"}}  # fmt: skip
    assert sent[1]["scope"] == {"model": "m"} and sent[1]["tags"] == ["t"]


def test_contradicts_takes_what_add_returned():
    script = Script((201, ADDED))
    m, _ = memory(script)
    user = m.for_user("alice")
    old = user.add("Alice prefers oat milk")
    user.contradict("Alice prefers soy milk", [old], reason="she said so")
    user.contradict("Alice prefers rice milk", old.deposit, reason="again")
    bodies = [json.loads(r.content) for r in script.requests[1:]]
    assert [b["contradicts"] for b in bodies] == [[DEPOSIT["id"]], [DEPOSIT["id"]]]
    with pytest.raises(InputValidationError, match="takes deposit ids"):
        user.contradict("x", [42], reason="r")  # type: ignore[list-item]


def test_a_recall_filter_refuses_a_note_which_is_not_a_facet():
    script = Script((200, {}))
    m, _ = memory(script)
    with pytest.raises(InputValidationError) as raised:
        m.for_user("alice").recall("milk", scope=Scope(note="kitchen"))
    assert raised.value.field == "scope.note" and script.requests == []


def test_one_async_memory_serves_one_event_loop_after_another():
    script = Script((200, HEALTH))
    m = AsyncMemory(api_key="k", base_url="http://atlaso.test", transport=httpx.MockTransport(script))

    async def health() -> int:
        return (await m.for_user("alice").health()).fmi

    assert asyncio.run(health()) == 72
    assert asyncio.run(health()) == 72  # a second loop: the first loop's connections are left behind
    asyncio.run(m.aclose())
