"""The client's tests: most run against Atlaso served for real (served.py), none against mocks
but the transport-fault tests, which replace only the network (httpx.MockTransport)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

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
