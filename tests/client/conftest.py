"""The client's tests beside the server: each runs against Atlaso served for real (served.py).

The package's own tests, the surface and the transport faults (which replace only the network,
with httpx.MockTransport), are in clients/python/tests and run with the package alone.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from atlaso import Memory
from tests.client.served import ServedAtlaso

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAtlaso]:
    """Atlaso on a free port with its own database, and three keys made by create_api_key."""
    server = ServedAtlaso.start(tmp_path_factory.mktemp("served-atlaso"))
    try:
        server.make_key("client-rw", "read", "write")
        server.make_key("client-erase", "read", "write", "erase")
        server.make_key("client-tenant", "read", "write", prefix="tenant-a:")
        yield server
        # Whatever the client sent, the server answered without a crash.
        assert "Traceback" not in server.log(), server.log()[-4000:]
    finally:
        server.stop()


@pytest.fixture
def client_env(served: ServedAtlaso, monkeypatch: pytest.MonkeyPatch) -> ServedAtlaso:
    """The environment the seeds assume: ATLASO_BASE_URL and ATLASO_API_KEY, and nothing else."""
    monkeypatch.setenv("ATLASO_BASE_URL", served.url)
    monkeypatch.setenv("ATLASO_API_KEY", served.keys["client-rw"])
    monkeypatch.delenv("ATLASO_USER", raising=False)
    return served


@pytest.fixture
def memory(client_env: ServedAtlaso) -> Iterator[Memory]:
    with Memory() as m:
        yield m


@pytest.fixture
def owner() -> str:
    """A memory owner no other test writes to."""
    return f"owner-{uuid.uuid4().hex[:12]}"


# The client's tests: the package's own (run with it alone too) and those beside the server.
CLIENT_TESTS = ("clients/python/tests", "tests/client")
KINDS = {
    "test_retries.py": "transport-fault",
    "test_mcp_tools.py": "MCP (in memory)",
    "test_mcp_settle.py": "MCP (in memory)",
    "test_langgraph_store.py": "LangGraph",
    "test_langchain.py": "LangChain",
    "test_agents_sdk.py": "OpenAI Agents SDK",
    "test_examples.py": "examples",
    "test_integration_docs.py": "examples",
    "test_mcp_stdio.py": "MCP (subprocess)",
    "test_packaging.py": "packaging",
    "test_bench_client.py": "benchmark",
    "test_surface.py": "surface",
    "test_enums.py": "surface",
}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line of the client's test counts by kind, for CI's log."""
    counts: dict[str, Counter[str]] = {}
    for outcome in ("passed", "failed", "error", "skipped"):
        for report in terminalreporter.stats.get(outcome, ()):
            path = Path(report.nodeid.split("::")[0])
            if path.parent.as_posix() not in CLIENT_TESTS or getattr(report, "when", "call") not in (
                "call",
                "setup",
            ):
                continue
            if outcome == "passed" and report.when != "call":
                continue
            kind = KINDS.get(path.name, "live-server")
            counts.setdefault(kind, Counter())[outcome] += 1
    if counts:
        parts = [
            f"{kind} {c['passed']} passed"
            + "".join(f", {c[o]} {o}" for o in ("failed", "error", "skipped") if c[o])
            for kind, c in sorted(counts.items())
        ]
        terminalreporter.write_line("atlaso client tests: " + "; ".join(parts))
