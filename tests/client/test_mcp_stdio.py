"""`atlaso mcp` end to end: the real command as a subprocess, driven over stdio by the `mcp` client.

Driven as an agent host drives it, against a served Atlaso. The session's transcript is saved
under var/test-artifacts/ for people to read.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters, stdio_client
from mcp.types import ElicitResult

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


BAD_CALLS = ROOT / "var" / "test-artifacts" / "mcp-bad-calls.txt"


def test_a_bad_owner_and_an_unknown_argument_answer_tool_errors_saying_why_and_nothing_crashes(
    served: ServedAtlaso, owner: str, tmp_path
):
    stderr = (tmp_path / "stderr.txt").open("w+")
    lines = [f"$ ATLASO_USER={owner} atlaso mcp   (stdio, driven by mcp.Client)"]
    calls = (
        ("add", {"content": "prefers tea", "user_id": "alice smith"}),
        ("recall", {"query": "tea", "limt": 3}),
    )

    async def main() -> list[Any]:
        answers = []
        async with Client(stdio_client(server(served, key="client-rw", user=owner), errlog=stderr)) as client:
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                lines.append(f"\n>>> tools/call {name} {json.dumps(arguments)}")
                lines.append(f"<<< isError={str(result.is_error).lower()}: {result.content[0].text}")
                answers.append(result)
        return answers

    bad_owner, unknown = asyncio.run(main())
    stderr.seek(0)
    log = stderr.read()
    lines.append(f"\n(the server's stderr: {log.strip() or 'nothing'})")
    BAD_CALLS.parent.mkdir(parents=True, exist_ok=True)
    BAD_CALLS.write_text("\n".join(lines) + "\n")

    assert bad_owner.is_error and "field user_id" in bad_owner.content[0].text
    assert "got 'alice smith'" in bad_owner.content[0].text
    assert unknown.is_error and "unknown argument 'limt' (did you mean 'limit'?)" in unknown.content[0].text
    assert "Traceback" not in log and "unexpected exception" not in log, log


def test_streamable_http_says_on_stderr_where_it_listens_and_writes_nothing_on_stdout(
    served: ServedAtlaso, owner: str
):
    params = server(served, key="client-rw", user=owner)
    # Port 0: any free port; the line says which.
    process = subprocess.Popen(
        [params.command, "mcp", "--transport", "streamable-http", "--port", "0"],
        env=params.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    said: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [said.put(line) for line in process.stderr], daemon=True).start()
    try:
        first = said.get(timeout=30)
        url = re.fullmatch(
            r"atlaso mcp: serving streamable HTTP at (http://127\.0\.0\.1:\d+/mcp) \(Ctrl-C stops it\)\n",
            first,
        )
        assert url, first

        async def main() -> Any:
            async with Client(url.group(1)) as client:
                return await client.list_tools()

        assert len(asyncio.run(main()).tools) == 11
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=10)
    assert out == ""


SETTLE = ROOT / "var" / "test-artifacts" / "mcp-settle-transcript.txt"


def test_a_person_settles_a_conflict_by_elicitation_over_stdio(served: ServedAtlaso, owner: str):
    lines: list[str] = [
        f"$ ATLASO_USER={owner} atlaso mcp   (stdio, driven by mcp.Client with an elicitation callback)"
    ]

    def record(label: str, value: Any) -> None:
        lines.append(f"\n>>> {label}")
        lines.append(value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False))

    async def person(context: Any, params: Any) -> ElicitResult:
        record("<<< elicitation/create (the host shows the person this form)", {
            "message": params.message, "requestedSchema": params.requested_schema,
        })  # fmt: skip
        answer = {"holds": "negative", "reason": "prod logs: 0.7 flags 30% of good traffic"}
        record("... the person chooses and answers (ElicitResult action=accept)", answer)
        return ElicitResult(action="accept", content=answer)

    async def main() -> Any:
        async with Client(server(served, key="client-rw", user=owner), elicitation_callback=person) as client:
            for polarity, text in (
                ("positive", "threshold 0.7 is optimal"),
                ("negative", "threshold 0.7 over-flags"),
            ):
                arguments = {"content": text, "polarity": polarity, "evidence_grade": "observed",
                             "scope": {"model": "gpt-5", "dataset": "prod", "env": "prod"}}  # fmt: skip
                added = await client.call_tool("add", arguments)
                record(f"tools/call add {json.dumps(arguments)}", added.content[0].text)
            listed = await client.call_tool("conflicts", {})
            record("tools/call conflicts {}", listed.content[0].text)
            (bag,) = listed.structured_content["items"]
            settled = await client.call_tool("settle", {"bag_id": bag["bag_id"]})
            record(f'tools/call settle {{"bag_id": "{bag["bag_id"]}"}}  (text)', settled.content[0].text)
            record("... structuredContent", settled.structured_content)
            found = await client.call_tool("recall", {"query": "threshold"})
            record('tools/call recall {"query": "threshold"}  (text)', found.content[0].text)
            return settled, found

    settled, found = asyncio.run(main())
    SETTLE.parent.mkdir(parents=True, exist_ok=True)
    SETTLE.write_text("\n".join(lines) + "\n")
    assert not settled.is_error and settled.structured_content["action"] == "accepted"
    correction = settled.structured_content["correction"]["deposit"]
    assert (correction["polarity"], correction["channel"]) == ("negative", "client-rw")
    assert found.structured_content["has_disagreement"] is False
    assert [hit["content"] for hit in found.structured_content["items"]] == ["threshold 0.7 over-flags"] * 2
