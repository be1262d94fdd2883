"""The MCP server's tools through the SDK's own client, in memory, against a served Atlaso."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from mcp import Client

from atlaso import AsyncMemory
from atlaso.mcp_server import build_server
from tests.client.served import ServedAtlaso

TOOLS = {
    "add",
    "recall",
    "get",
    "list_recent",
    "contradict",
    "retract",
    "health",
    "peek",
    "add_many",
    "conflicts",
    "settle",
}
READ_ONLY = {"recall", "get", "list_recent", "health", "peek", "conflicts"}
PROD = {"model": "gpt-5", "dataset": "evals", "env": "prod"}


def session(
    served: ServedAtlaso,
    work: Callable[[Client], Awaitable[Any]],
    *,
    key: str | None = "client-rw",
    default_user: str | None = None,
) -> Any:
    async def main() -> Any:
        api_key = served.keys[key] if key else ""
        memory = AsyncMemory(api_key=api_key, base_url=served.url)
        async with memory, Client(build_server(memory, default_user=default_user)) as client:
            return await work(client)

    return asyncio.run(main())


def test_it_lists_the_seeds_tools_and_conflicts_each_described_typed_and_annotated(served: ServedAtlaso):
    tools = {tool.name: tool for tool in session(served, lambda c: c.list_tools()).tools}
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        assert tool.description and len(tool.description) > 80, name
        assert tool.output_schema and tool.output_schema["type"] == "object", name
        assert "user_id" in tool.input_schema["properties"], name
        assert tool.annotations is not None and tool.annotations.read_only_hint is (name in READ_ONLY), name
    assert tools["retract"].annotations.destructive_hint is True
    assert not any(tools[name].annotations.destructive_hint for name in TOOLS - {"retract"})
    add = tools["add"].input_schema
    assert add["properties"]["polarity"]["enum"] == ["positive", "negative", "cautionary", "open"]
    assert add["properties"]["evidence_grade"]["enum"] == ["anecdotal", "observed", "replicated", "verified"]
    assert add["required"] == ["content"]
    assert set(add["$defs"]["ScopeIn"]["properties"]) == {
        "model",
        "dataset",
        "env",
        "version",
        "n",
        "seed",
        "note",
    }
    assert tools["recall"].input_schema["required"] == ["query"]
    assert tools["retract"].input_schema["properties"]["mode"]["enum"] == ["soft", "hard"]
    assert tools["recall"].output_schema["properties"]["has_disagreement"] == {
        "title": "Has Disagreement",
        "type": "boolean",
    }


def test_add_and_recall_answer_structured_content_and_a_short_text(served: ServedAtlaso, owner: str):
    async def work(client: Client) -> None:
        yes = await client.call_tool("add", {"content": "retries fix the flaky upload", "polarity": "positive",
                                             "evidence_grade": "observed", "scope": PROD, "user_id": owner})  # fmt: skip
        assert not yes.is_error
        assert yes.structured_content["kind"] == "add_result"
        deposit = yes.structured_content["deposit"]
        assert (deposit["user_id"], deposit["scope"]["env"], deposit["channel"]) == (
            owner,
            "prod",
            "client-rw",
        )
        assert (
            yes.content[0].text == f"Stored: {deposit['id']}: positive/observed: retries fix the flaky upload"
        )
        await client.call_tool("add", {"content": "retries do not fix the flaky upload", "polarity": "negative",
                                       "evidence_grade": "observed", "scope": PROD, "user_id": owner})  # fmt: skip

        found = await client.call_tool("recall", {"query": "flaky upload", "user_id": owner, "limit": 1})
        assert not found.is_error
        results = found.structured_content
        assert results["kind"] == "search_results"
        assert results["has_disagreement"] is True and results["is_confident"] is False
        assert len(results["items"]) == 1 and results["items"][0]["has_disagreement"] is True
        assert results["items"][0]["conflict_peers"]
        text = found.content[0].text.splitlines()
        assert text[0] == results["explain"] == "1 hit across 1 bag · 1 bag in conflict · not confident"
        assert text[1].startswith("- [conflict] ")

    session(served, work)


def test_recall_takes_a_mode_and_says_which_ranking_found_each_hit(served: ServedAtlaso, owner: str):
    """The suite's server recalls by words alone (ATLASO_EMBEDDER=none): meaning is a tool error."""

    async def work(client: Client) -> None:
        await client.call_tool("add", {"content": "retries fix the flaky upload", "user_id": owner})
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        mode = tools["recall"].input_schema["properties"]["mode"]
        enum = [value for choice in mode["anyOf"] for value in choice.get("enum", ())]
        assert enum == ["words", "meaning", "hybrid"]
        assert "meaning" in mode["description"] and "words" in mode["description"]
        found = await client.call_tool("recall", {"query": "flaky upload", "user_id": owner, "mode": "words"})
        assert [hit["matched_by"] for hit in found.structured_content["items"]] == ["words"]
        refused = await client.call_tool(
            "recall", {"query": "flaky upload", "user_id": owner, "mode": "meaning"}
        )
        assert refused.is_error and "needs an embedder" in refused.content[0].text

    session(served, work)


def test_a_gate_rejection_is_a_tool_error_that_says_what_would_pass(served: ServedAtlaso, owner: str):
    async def work(client: Client) -> None:
        refused = await client.call_tool(
            "add", {"content": "all uploads work", "polarity": "positive", "user_id": owner}
        )
        assert refused.is_error and refused.structured_content is None
        text = refused.content[0].text
        assert "positive/broad claim requires evidence_grade>=replicated" in text
        assert "Nothing was stored" in text and "a narrower scope" in text
        peek = await client.call_tool("peek", {"user_id": owner})
        assert peek.structured_content["total_count"] == 0

    session(served, work)


def test_bad_input_is_refused_by_the_schema_naming_the_allowed_values(served: ServedAtlaso, owner: str):
    async def work(client: Client) -> None:
        refused = await client.call_tool("add", {"content": "x", "polarity": "strong", "user_id": owner})
        assert refused.is_error
        assert "'positive', 'negative', 'cautionary' or 'open'" in refused.content[0].text

    session(served, work)


def test_every_tool_works_on_the_default_owner(served: ServedAtlaso, owner: str):
    async def work(client: Client) -> dict[str, Any]:
        calls: dict[str, Any] = {}

        async def call(name: str, **arguments: Any) -> dict[str, Any]:
            result = await client.call_tool(name, arguments)
            assert not result.is_error, (name, result.content)
            calls[name] = result
            return result.structured_content

        first = (await call("add", content="likes tea"))["deposit"]
        assert first["user_id"] == owner
        assert (await call("get", deposit_id=first["id"]))["content"] == "likes tea"
        fix = await call("contradict", content="likes green tea", contradicts=[first["id"]], reason="said so")
        assert fix["deposit"]["contradicts"] == [first["id"]]
        bulk = await call(
            "add_many", items=[{"content": f"row {n}", "idempotency_key": f"ak_row_{n}"} for n in range(3)]
        )
        assert (len(bulk["committed"]), bulk["all_succeeded"]) == (3, True)
        page = await call("list_recent", limit=2)
        assert (page["kind"], page["total"], len(page["items"])) == ("deposit_page", 5, 2)
        gone = await call("retract", deposit_id=fix["deposit"]["id"], reason="mistaken")
        assert (gone["kind"], gone["mode"]) == ("retract_result", "soft")
        health = await call("health", window_days=7)
        assert health["kind"] == "diagnostics" and calls["health"].content[0].text == health["explain"]
        peek = await call("peek")
        assert peek["kind"] == "peek_view" and peek["user_id"] == owner
        return calls

    calls = session(served, work, default_user=owner)
    assert set(calls) == TOOLS - {"recall", "conflicts", "settle"}


def test_without_user_id_or_a_default_owner_the_tool_says_what_to_give(served: ServedAtlaso):
    async def work(client: Client) -> None:
        refused = await client.call_tool("peek", {})
        assert refused.is_error and "user_id is required" in refused.content[0].text
        assert "ATLASO_USER" in refused.content[0].text

    session(served, work)


def test_conflicts_lists_each_side_and_the_page_where_a_person_resolves_it(served: ServedAtlaso, owner: str):
    async def work(client: Client) -> Any:
        for polarity, text in (("positive", "retries fix it"), ("negative", "retries do not fix it"),
                               ("cautionary", "retries fix it but double the latency")):  # fmt: skip
            await client.call_tool("add", {"content": text, "polarity": polarity, "evidence_grade": "observed",
                                           "scope": PROD, "user_id": owner})  # fmt: skip
        await client.call_tool("add", {"content": "a quiet note", "scope": {"model": "m"}, "user_id": owner})
        return await client.call_tool("conflicts", {"user_id": owner})

    result = session(served, work)
    assert not result.is_error
    listed = result.structured_content
    assert (listed["kind"], listed["user_id"], listed["total"]) == ("conflicts", owner, 1)
    (item,) = listed["items"]
    assert [c["content"] for c in item["positive"]] == ["retries fix it"]
    assert [c["content"] for c in item["negative"]] == ["retries do not fix it"]
    assert [c["content"] for c in item["cautionary"]] == ["retries fix it but double the latency"]
    assert item["resolve_url"] == f"{served.url}/owners/{owner}/bags/{item['bag_id']}/"
    assert item["resolve_url"] in result.content[0].text
    # A real page of the dashboard: it asks a person to log in, then shows the bag.
    page = httpx.get(item["resolve_url"])
    assert page.status_code == 302 and page.headers["location"].startswith("/accounts/login/?next=")


def test_without_an_api_key_every_tool_says_how_to_get_one(served: ServedAtlaso):
    async def work(client: Client) -> None:
        for name, arguments in (("recall", {"query": "tea"}), ("add", {"content": "likes tea"})):
            refused = await client.call_tool(name, {**arguments, "user_id": "alice"})
            assert refused.is_error and "create_api_key" in refused.content[0].text, name
            assert "set ATLASO_API_KEY in the env of the atlaso entry" in refused.content[0].text

    session(served, work, key=None)


def test_a_misspelt_facet_fails_the_call_instead_of_storing_an_unscoped_claim(
    served: ServedAtlaso, owner: str
):
    async def work(client: Client) -> None:
        for name, arguments in (
            ("add", {"content": "cache fails under load", "scope": {"environment": "prod"}}),
            ("recall", {"query": "cache", "scope": {"model_name": "a"}}),
            ("add_many", {"items": [{"content": "x", "idempotency_key": "k", "polarty": "negative"}]}),
        ):
            refused = await client.call_tool(name, {**arguments, "user_id": owner})
            assert refused.is_error, name
        assert (await client.call_tool("peek", {"user_id": owner})).structured_content["total_count"] == 0
        schema = {t.name: t for t in (await client.list_tools()).tools}["add"].input_schema
        assert schema["$defs"]["ScopeIn"]["additionalProperties"] is False

    session(served, work)


def test_the_owner_argument_says_whether_the_server_has_a_default(served: ServedAtlaso):
    def owner_help(default_user: str | None) -> str:
        tools = session(served, lambda c: c.list_tools(), default_user=default_user).tools
        (text,) = {t.input_schema["properties"]["user_id"]["description"] for t in tools}
        return text

    assert "Leave it out for this server's default owner, 'alice'." in owner_help("alice")
    assert "Required: this server has no default owner (ATLASO_USER is unset)." in owner_help(None)


# The least each tool needs besides user_id, to reach the owner.
MINIMAL = {
    "add": {"content": "likes tea"},
    "recall": {"query": "tea"},
    "get": {"deposit_id": "dep_missing"},
    "list_recent": {},
    "contradict": {"content": "likes coffee", "contradicts": ["dep_missing"], "reason": "said so"},
    "retract": {"deposit_id": "dep_missing", "reason": "wrong"},
    "health": {},
    "peek": {},
    "add_many": {"items": [{"content": "x", "idempotency_key": "k1"}]},
    "conflicts": {},
    "settle": {"bag_id": "bag_missing"},
}


def crashes(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the server logged as a crash (a traceback), rather than as a tool error."""
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]


def test_a_bad_user_id_on_any_tool_is_a_tool_error_naming_it_without_a_crash(
    served: ServedAtlaso, caplog: pytest.LogCaptureFixture
):
    async def work(client: Client) -> dict[str, str]:
        answers = {}
        for name, arguments in MINIMAL.items():
            result = await client.call_tool(name, {**arguments, "user_id": "bad id!"})
            assert result.is_error, name
            answers[name] = result.content[0].text
        return answers

    assert set(MINIMAL) == TOOLS
    for name, text in session(served, work).items():
        assert text.startswith(f"Error executing tool {name}: Invalid input (field user_id): "), text
        assert "user_id must be 1..128 characters of letters, digits" in text and "got 'bad id!'" in text
    assert crashes(caplog) == []


def test_an_owner_refused_by_the_clients_own_validator_is_a_tool_error_saying_why(
    served: ServedAtlaso, caplog: pytest.LogCaptureFixture
):
    def tenants_only(user_id: str) -> None:
        if not user_id.startswith("tenant-a:"):
            raise ValueError("this agent may only reach owners of tenant-a")

    async def main() -> Any:
        memory = AsyncMemory(
            api_key=served.keys["client-rw"], base_url=served.url, validate_user_id=tenants_only
        )
        async with memory, Client(build_server(memory)) as client:
            return await client.call_tool("peek", {"user_id": "alice"})

    refused = asyncio.run(main())
    assert refused.is_error
    assert refused.content[0].text == (
        "Error executing tool peek: user_id 'alice' is refused: this agent may only reach owners of tenant-a"
    )
    assert crashes(caplog) == []


def test_an_unknown_argument_is_refused_by_name_with_the_likely_one_and_nothing_is_done(
    served: ServedAtlaso, owner: str
):
    async def work(client: Client) -> None:
        refused = await client.call_tool("recall", {"query": "tea", "limt": 5, "user_id": owner})
        assert refused.is_error and refused.structured_content is None
        assert refused.content[0].text == (
            "Error executing tool recall: unknown argument 'limt' (did you mean 'limit'?): recall takes "
            "query, limit, scope, include_superseded, mode, user_id. Nothing was done; call it again with these names."
        )
        refused = await client.call_tool(
            "add", {"content": "likes tea", "polarty": "positive", "colour": "red", "user_id": owner}
        )
        assert refused.is_error
        assert "unknown arguments 'polarty' (did you mean 'polarity'?), 'colour': add takes content, " in (
            refused.content[0].text
        )
        assert (await client.call_tool("peek", {"user_id": owner})).structured_content["total_count"] == 0
        for tool in (await client.list_tools()).tools:
            assert tool.input_schema["additionalProperties"] is False, tool.name

    session(served, work)


def test_descriptions_read_as_prose_without_the_sources_indentation_or_line_breaks(served: ServedAtlaso):
    tools = session(served, lambda c: c.list_tools()).tools
    for tool in tools:
        assert "\n" not in tool.description and "  " not in tool.description, (tool.name, tool.description)
    recall = {t.name: t for t in tools}["recall"].description
    assert recall.startswith(
        "Search the owner's memory before answering from it. Each hit carries its bag's flags:"
    )


def test_a_recall_writes_each_hit_once_with_who_wrote_it(served: ServedAtlaso, owner: str):
    texts = ("the nightly export times out on large owners", "the nightly export finishes when batched")

    async def work(client: Client) -> Any:
        for polarity, text in zip(("negative", "positive"), texts, strict=True):
            added = await client.call_tool("add", {"content": text, "polarity": polarity, "evidence_grade": "observed",
                                                   "scope": PROD, "author": "ops-bot", "user_id": owner})  # fmt: skip
            assert not added.is_error, added.content
        return await client.call_tool("recall", {"query": "nightly export", "user_id": owner})

    found = session(served, work)
    assert not found.is_error
    structured = found.structured_content
    written = json.dumps(structured)
    assert len(structured["items"]) == 2
    for text in texts:
        assert written.count(text) == 1, written
    for hit in structured["items"]:
        assert "deposit" not in hit
        assert (hit["author"], hit["channel"], hit["artifact_refs"]) == ("ops-bot", "client-rw", [])
    # Two hits, each with its flags, explanation and scope: 1,840 bytes (2,779 when the API's
    # whole deposit rode along with each).
    assert len(written) < 2000, len(written)
