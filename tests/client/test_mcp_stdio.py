"""`atlaso mcp` end to end: the real command as a subprocess, driven over stdio by the `mcp`
client as an agent host drives it, against a served Atlaso. The session's transcript is saved
under var/test-artifacts/ for people to read."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters, stdio_client

from tests.client.served import ROOT, ServedAtlaso, free_port

ATLASO = shutil.which("atlaso", path=str(Path(sys.executable).parent))
TRANSCRIPT = ROOT / "var" / "test-artifacts" / "mcp-stdio-transcript.txt"


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def server(served: ServedAtlaso, *, key: str | None, user: str) -> StdioServerParameters:
    assert ATLASO, f"no atlaso command beside {sys.executable}: pip install -e ./clients/python[mcp]"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATLASO_")}
    env |= {"ATLASO_BASE_URL": served.url, "ATLASO_USER": user}
    if key:
        env["ATLASO_API_KEY"] = served.keys[key]
    return StdioServerParameters(command=ATLASO, args=["mcp"], env=env)


def test_an_agent_host_lists_adds_recalls_and_sees_the_conflict_over_stdio(served: ServedAtlaso, owner: str):
    lines: list[str] = [f"$ ATLASO_USER={owner} atlaso mcp   (stdio, driven by mcp.Client)"]

    def record(label: str, value: Any) -> None:
        lines.append(f"\n>>> {label}")
        lines.append(value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False))

    async def main() -> None:
        async with Client(server(served, key="client-rw", user=owner)) as client:
            tools = (await client.list_tools()).tools
            record(
                "tools/list",
                [f"{t.name}{' (read-only)' if t.annotations.read_only_hint else ''}" for t in tools],
            )
            assert {t.name for t in tools} >= {"add", "recall", "conflicts"}

            for polarity, text in (
                ("positive", "threshold 0.7 is optimal"),
                ("negative", "threshold 0.7 over-flags"),
            ):
                arguments = {"content": text, "polarity": polarity, "evidence_grade": "observed",
                             "scope": {"model": "gpt-5", "dataset": "prod", "env": "prod"}}  # fmt: skip
                added = await client.call_tool("add", arguments)
                record(f"tools/call add {json.dumps(arguments)}", added.content[0].text)
                assert not added.is_error and added.structured_content["deposit"]["user_id"] == owner

            found = await client.call_tool("recall", {"query": "threshold"})
            record('tools/call recall {"query": "threshold"}  (text)', found.content[0].text)
            record("... structuredContent (flags)", {
                k: found.structured_content[k] for k in ("has_disagreement", "is_confident", "bag_count", "conflict_bag_count")
            } | {"items": [{k: hit[k] for k in ("content", "polarity", "has_disagreement", "is_confident", "conflict_peers")}
                           for hit in found.structured_content["items"]]})  # fmt: skip
            assert found.structured_content["has_disagreement"] is True
            assert all(hit["has_disagreement"] for hit in found.structured_content["items"])

            listed = await client.call_tool("conflicts", {})
            record("tools/call conflicts {}", listed.content[0].text)
            assert listed.structured_content["total"] == 1

            refused = await client.call_tool(
                "add", {"content": "every threshold works", "polarity": "positive"}
            )
            record('tools/call add {"content": "every threshold works", "polarity": "positive"}  (isError)',
                   refused.content[0].text)  # fmt: skip
            assert refused.is_error and "requires evidence_grade>=replicated" in refused.content[0].text

    asyncio.run(main())
    TRANSCRIPT.parent.mkdir(parents=True, exist_ok=True)
    TRANSCRIPT.write_text("\n".join(lines) + "\n")


def test_without_a_key_the_server_starts_warns_and_each_tool_says_how_to_get_one(
    served: ServedAtlaso, tmp_path
):
    stderr = (tmp_path / "stderr.txt").open("w+")

    async def main() -> str:
        async with Client(stdio_client(server(served, key=None, user="alice"), errlog=stderr)) as client:
            result = await client.call_tool("peek", {})
            assert result.is_error
            return result.content[0].text

    assert "create_api_key" in asyncio.run(main())
    stderr.seek(0)
    assert "atlaso mcp: warning: no API key" in stderr.read()


def test_streamable_http_serves_the_same_tools_to_a_remote_agent(served: ServedAtlaso, owner: str, tmp_path):
    params = server(served, key="client-rw", user=owner)
    port = free_port()
    log = (tmp_path / "mcp-http.log").open("w")
    process = subprocess.Popen(
        [params.command, "mcp", "--transport", "streamable-http", "--port", str(port)],
        env=params.env, stdout=log, stderr=log,
    )  # fmt: skip

    async def main() -> Any:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            await client.call_tool("add", {"content": "likes tea over HTTP"})
            return await client.call_tool("recall", {"query": "tea"})

    try:
        deadline = time.monotonic() + 30
        while not listening(port):
            assert process.poll() is None and time.monotonic() < deadline, (
                tmp_path / "mcp-http.log"
            ).read_text()
            time.sleep(0.1)
        found = asyncio.run(main())
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert not found.is_error
    assert [hit["content"] for hit in found.structured_content["items"]] == ["likes tea over HTTP"]
