"""`atlaso mcp` through the OpenAI Agents SDK's own MCP classes (the real `openai-agents` package).

`MCPServerStdio` starts the command as a host does, and `MCPServerStreamableHttp` reaches one
HTTP server as two agents, each with its own API key in its Authorization header. No model is
needed: the SDK's classes list and call the tools as an agent run would.
"""

from __future__ import annotations

import asyncio
import os
import queue
import re
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp

from atlaso import Memory
from tests.client.served import ServedAtlaso
from tests.client.test_mcp_stdio import ATLASO

TOOLS = ["add", "recall", "get", "list_recent", "contradict", "retract", "health", "peek", "add_many",
         "conflicts", "settle"]  # fmt: skip


def env(served: ServedAtlaso, **extra: str) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("ATLASO_")}
    return {**inherited, "ATLASO_BASE_URL": served.url, **extra}


def test_mcp_server_stdio_lists_and_calls_the_tools(served: ServedAtlaso, owner: str):
    async def main() -> Any:
        params = {"command": ATLASO, "args": ["mcp"],
                  "env": env(served, ATLASO_API_KEY=served.keys["client-rw"], ATLASO_USER=owner)}  # fmt: skip
        async with MCPServerStdio(params=params, name="atlaso", client_session_timeout_seconds=30) as server:
            tools = await server.list_tools()
            added = await server.call_tool("add", {"content": "the deploy needs a feature flag"})
            found = await server.call_tool("recall", {"query": "deploy flag"})
            refused = await server.call_tool("add", {"content": "x", "polarty": "negative"})
            return tools, added, found, refused

    tools, added, found, refused = asyncio.run(main())
    assert [tool.name for tool in tools] == TOOLS
    assert {t.name: t for t in tools}["recall"].annotations.read_only_hint is True
    assert not added.is_error and added.structured_content["deposit"]["user_id"] == owner
    assert [hit["content"] for hit in found.structured_content["items"]] == [
        "the deploy needs a feature flag"
    ]
    assert (
        refused.is_error
        and "unknown argument 'polarty' (did you mean 'polarity'?)" in refused.content[0].text
    )


@pytest.fixture(scope="module")
def http_server(served: ServedAtlaso) -> Iterator[str]:
    """`atlaso mcp` over streamable HTTP with no key of its own: each caller brings theirs."""
    process = subprocess.Popen(
        [ATLASO, "mcp", "--transport", "streamable-http", "--port", "0"],
        env=env(served), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    said: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [said.put(line) for line in process.stderr], daemon=True).start()
    try:
        while (line := said.get(timeout=30)) and "serving streamable HTTP" not in line:
            assert "each caller must send its own key" in line, line
        url = re.search(r"(http://\S+/mcp)", line)
        assert url, line
        yield url.group(1)
    finally:
        process.terminate()
        process.wait(timeout=10)


def agent(url: str, key: str | None) -> MCPServerStreamableHttp:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return MCPServerStreamableHttp({"url": url, "headers": headers, "timeout": 30}, name="atlaso")


def test_two_agents_with_their_own_keys_share_one_http_server(
    served: ServedAtlaso, http_server: str, owner: str
):
    tenant_owner = f"tenant-a:{owner}"

    async def main() -> Any:
        async with (
            agent(http_server, served.keys["client-rw"]) as first,
            agent(http_server, served.keys["client-tenant"]) as second,
        ):
            listed = [t.name for t in await second.list_tools()]
            by_first = await first.call_tool(
                "add", {"content": "written by the first agent", "user_id": tenant_owner}
            )
            by_second = await second.call_tool("add", {"content": "written by the second agent",
                                                       "user_id": tenant_owner})  # fmt: skip
            # The second key is confined to owners under tenant-a: and the first is not.
            outside = await second.call_tool("peek", {"user_id": owner})
            inside = await first.call_tool("peek", {"user_id": owner})
            found = await second.call_tool("recall", {"query": "written agent", "user_id": tenant_owner})
            return listed, by_first, by_second, outside, inside, found

    listed, by_first, by_second, outside, inside, found = asyncio.run(main())
    assert listed == TOOLS
    assert by_first.structured_content["deposit"]["channel"] == "client-rw"
    assert by_second.structured_content["deposit"]["channel"] == "client-tenant"
    assert outside.is_error
    assert outside.content[0].text == (
        "Error executing tool peek: this API key is confined to user_ids starting 'tenant-a:'"
    )
    assert not inside.is_error
    assert {hit["channel"] for hit in found.structured_content["items"]} == {"client-rw", "client-tenant"}
    with Memory(api_key=served.keys["client-rw"], base_url=served.url) as memory:
        channels = {d.content: d.channel for d in memory.for_user(tenant_owner).list_recent()}
    assert channels == {
        "written by the first agent": "client-rw",
        "written by the second agent": "client-tenant",
    }


def test_an_agent_without_a_key_or_with_a_bad_one_is_told_what_to_send(
    served: ServedAtlaso, http_server: str
):
    async def main() -> Any:
        async with agent(http_server, None) as keyless, agent(http_server, "atl_not-a-key") as wrong:
            return (
                await keyless.call_tool("peek", {"user_id": "alice"}),
                await wrong.call_tool("peek", {"user_id": "alice"}),
            )

    keyless, wrong = asyncio.run(main())
    assert keyless.is_error and "No Atlaso API key: send yours as 'Authorization: Bearer <key>'" in (
        keyless.content[0].text
    )
    assert wrong.is_error and "Atlaso refused the API key this request sent in its Authorization header" in (
        wrong.content[0].text
    )
