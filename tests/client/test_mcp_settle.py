"""The MCP server's resources, prompts and `settle`, through the SDK's own client in memory.

Against a served Atlaso: the person's answer arrives by the client's elicitation callback, on
the handshake-era protocol (a server-to-client request mid-call) and on the 2026-07-28 one (an
input-required round trip).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from mcp import Client
from mcp.types import ElicitResult

from atlaso import AsyncMemory, Memory
from atlaso.mcp_server import build_server
from tests.client.served import ServedAtlaso

PROD = {"model": "gpt-5", "dataset": "evals", "env": "prod"}
ERAS = ["legacy", "auto"]  # auto negotiates 2026-07-28 with this SDK


def session(
    served: ServedAtlaso,
    work: Callable[[Client], Awaitable[Any]],
    *,
    owner: str | None = None,
    answer: Callable[[Any], ElicitResult] | None = None,
    mode: str = "auto",
) -> Any:
    asked: list[Any] = []

    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params)
        assert answer is not None
        return answer(params)

    async def main() -> Any:
        memory = AsyncMemory(api_key=served.keys["client-rw"], base_url=served.url)
        server = build_server(memory, default_user=owner)
        callback = elicit if answer is not None else None
        async with memory, Client(server, elicitation_callback=callback, mode=mode) as client:
            return await work(client), asked

    return asyncio.run(main())


def conflict(served: ServedAtlaso, owner: str) -> tuple[str, dict[str, str]]:
    """A bag of `owner` in conflict: one positive and one negative claim; (bag id, ids by side)."""
    with Memory(api_key=served.keys["client-rw"], base_url=served.url) as memory:
        user = memory.for_user(owner)
        ids = {
            polarity: user.add(text, polarity=polarity, evidence_grade="observed", scope=PROD).id
            for polarity, text in (("positive", "threshold 0.7 is optimal"), ("negative", "threshold 0.7 over-flags"))
        }  # fmt: skip
        (bag,) = user.bags(conflict=True).items
    return bag.bag_id, ids


def edge_reasons(served: ServedAtlaso, correction: str) -> dict[str, str]:
    """The reasons on the edges a correction wrote, as the server keeps them (old id: reason)."""
    code = (
        "import json; from deposits.models import Contradiction as C; print(json.dumps({str(e.old_deposit_id): "
        f"e.reason for e in C.objects.filter(new_deposit_id='{correction}')}}))"
    )
    return json.loads(served.manage("shell", "-c", code).strip().splitlines()[-1])


def accept(holds: str, reason: str) -> Callable[[Any], ElicitResult]:
    return lambda params: ElicitResult(action="accept", content={"holds": holds, "reason": reason})


@pytest.mark.parametrize("mode", ERAS)
def test_settle_asks_the_person_naming_both_claims_and_writes_their_side_with_their_reason(
    served: ServedAtlaso, owner: str, mode: str
):
    bag_id, ids = conflict(served, owner)
    reason = "the prod logs show 30% false positives at 0.7"
    result, asked = session(
        served,
        lambda c: c.call_tool("settle", {"bag_id": bag_id}),
        owner=owner,
        answer=accept("negative", reason),
        mode=mode,
    )
    (question,) = asked
    assert "threshold 0.7 is optimal" in question.message and "threshold 0.7 over-flags" in question.message
    choices = question.requested_schema["properties"]["holds"]["oneOf"]
    assert choices == [
        {"const": "positive", "title": "Positive holds: threshold 0.7 is optimal"},
        {"const": "negative", "title": "Negative holds: threshold 0.7 over-flags"},
    ]
    assert question.requested_schema["required"] == ["holds", "reason"]

    assert not result.is_error, result.content
    settled = result.structured_content
    assert (settled["action"], settled["holds"], settled["reason"]) == ("accepted", "negative", reason)
    correction = settled["correction"]["deposit"]
    assert correction["content"] == "threshold 0.7 over-flags" and correction["polarity"] == "negative"
    assert correction["contradicts"] == [ids["positive"]]
    # Written with this server's key: on its channel, not the dashboard's review channel.
    assert correction["channel"] == "client-rw"
    assert edge_reasons(served, correction["id"]) == {ids["positive"]: reason}
    with Memory(api_key=served.keys["client-rw"], base_url=served.url) as memory:
        user = memory.for_user(owner)
        assert user.get(ids["positive"]).superseded_by == (correction["id"],)
        assert user.bags(conflict=True).total == 0
        assert user.recall("threshold").has_disagreement is False


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(("action", "said"), [("decline", "declined"), ("cancel", "cancelled")])
def test_settle_declined_or_cancelled_writes_nothing_and_points_at_the_dashboard(
    served: ServedAtlaso, owner: str, mode: str, action: str, said: str
):
    bag_id, _ = conflict(served, owner)
    result, asked = session(
        served,
        lambda c: c.call_tool("settle", {"bag_id": bag_id}),
        owner=owner,
        answer=lambda params: ElicitResult(action=action),
        mode=mode,
    )
    assert len(asked) == 1 and not result.is_error
    settled = result.structured_content
    assert (settled["action"], settled["correction"]) == (said, None)
    url = f"{served.url}/owners/{owner}/bags/{bag_id}/"
    assert settled["resolve_url"] == url and url in result.content[0].text
    assert "Nothing was written" in result.content[0].text
    with Memory(api_key=served.keys["client-rw"], base_url=served.url) as memory:
        user = memory.for_user(owner)
        assert user.bags(conflict=True).total == 1 and user.list_recent().total == 2


@pytest.mark.parametrize("mode", ERAS)
def test_on_a_host_that_cannot_ask_settle_answers_the_dashboard_page_and_writes_nothing(
    served: ServedAtlaso, owner: str, mode: str
):
    bag_id, _ = conflict(served, owner)
    result, _ = session(served, lambda c: c.call_tool("settle", {"bag_id": bag_id}), owner=owner, mode=mode)
    assert not result.is_error
    url = f"{served.url}/owners/{owner}/bags/{bag_id}/"
    assert result.structured_content["action"] == "not_asked"
    assert result.content[0].text == (
        "Not settled: this host cannot ask the person (it does not support MCP elicitation). "
        f"A person settles it on the dashboard: {url}"
    )
    with Memory(api_key=served.keys["client-rw"], base_url=served.url) as memory:
        assert memory.for_user(owner).list_recent().total == 2


def test_settle_refuses_a_bag_that_is_not_in_conflict_without_asking(served: ServedAtlaso, owner: str):
    with Memory(api_key=served.keys["client-rw"], base_url=served.url) as memory:
        memory.for_user(owner).add("likes tea", scope=PROD)
        (bag,) = memory.for_user(owner).bags().items
    result, asked = session(
        served,
        lambda c: c.call_tool("settle", {"bag_id": bag.bag_id}),
        owner=owner,
        answer=accept("positive", "x"),
    )
    assert asked == [] and result.is_error
    assert "is not in conflict (its live claims agree): there is nothing to settle" in result.content[0].text


def test_resources_answer_the_owners_conflicts_health_and_a_deposit_as_json(served: ServedAtlaso, owner: str):
    bag_id, ids = conflict(served, owner)

    async def work(client: Client) -> dict[str, Any]:
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        read = {}
        for uri in (
            f"atlaso://{owner}/conflicts",
            f"atlaso://{owner}/health",
            f"atlaso://{owner}/deposits/{ids['negative']}",
        ):
            (content,) = (await client.read_resource(uri)).contents
            assert content.mime_type == "application/json"
            read[uri.split("/", 3)[3]] = json.loads(content.text)
        return {"templates": templates, "listed": listed, "read": read}

    got, _ = session(served, work, owner=owner)
    assert got["templates"] == {
        "atlaso://{user_id}/conflicts",
        "atlaso://{user_id}/deposits/{deposit_id}",
        "atlaso://{user_id}/health",
    }
    assert got["listed"] == {f"atlaso://{owner}/conflicts", f"atlaso://{owner}/health"}
    conflicts = got["read"]["conflicts"]
    assert (conflicts["kind"], conflicts["total"]) == ("conflicts", 1)
    assert conflicts["items"][0]["bag_id"] == bag_id
    assert [c["content"] for c in conflicts["items"][0]["positive"]] == ["threshold 0.7 is optimal"]
    assert got["read"]["health"]["kind"] == "diagnostics" and got["read"]["health"]["deposit_count"] == 2
    deposit = got["read"][f"deposits/{ids['negative']}"]
    assert (deposit["kind"], deposit["content"], deposit["superseded_by"]) == (
        "deposit",
        "threshold 0.7 over-flags",
        [],
    )


def test_a_resource_the_owner_does_not_have_is_an_error_that_says_so(served: ServedAtlaso, owner: str):
    async def work(client: Client) -> str:
        try:
            await client.read_resource(f"atlaso://{owner}/deposits/00000000-0000-0000-0000-000000000000")
        except Exception as error:
            return str(error)
        raise AssertionError("read a deposit that does not exist")

    message, _ = session(served, work, owner=owner)
    assert "no deposit '00000000-0000-0000-0000-000000000000'" in message


def test_prompts_are_listed_and_carry_the_memory_they_are_about(served: ServedAtlaso, owner: str):
    bag_id, _ = conflict(served, owner)

    async def work(client: Client) -> Any:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        settle = await client.get_prompt("settle_conflict", {})
        knows = await client.get_prompt("what_memory_knows", {"topic": "threshold"})
        return prompts, settle, knows

    (prompts, settle, knows), _ = session(served, work, owner=owner)
    assert set(prompts) == {"settle_conflict", "what_memory_knows"}
    assert prompts["settle_conflict"].title == "Settle a conflict with the user"
    assert prompts["what_memory_knows"].title == "What the memory knows about …"
    assert [a.name for a in prompts["what_memory_knows"].arguments] == ["topic", "user_id"]
    assert prompts["what_memory_knows"].arguments[0].required is True
    (message,) = settle.messages
    text = message.content.text
    assert message.role == "user" and bag_id in text
    assert "positive: threshold 0.7 is optimal" in text and "negative: threshold 0.7 over-flags" in text
    assert "call the settle tool" in text
    knows_text = knows.messages[0].content.text
    assert 'holds about "threshold" (2 hits across 1 bag · 1 bag in conflict · not confident)' in knows_text
    assert "[conflict] negative/observed" in knows_text


def test_a_write_tells_listening_hosts_the_owners_resources_changed(served: ServedAtlaso, owner: str):
    async def work(client: Client) -> Any:
        capabilities = client.session.server_capabilities
        uri = f"atlaso://{owner}/conflicts"
        async with client.listen(resource_subscriptions=[uri]) as subscription:
            await client.call_tool("add", {"content": "likes tea"})
            async with asyncio.timeout(10):
                async for event in subscription:
                    return capabilities, event

    (capabilities, event), _ = session(served, work, owner=owner)
    assert capabilities.resources.list_changed is True
    assert event.uri == f"atlaso://{owner}/conflicts"
