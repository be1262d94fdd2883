"""Fault tests: Atlaso's processes on their own PostgreSQL and Redis, stopped and killed on purpose.

A PostgreSQL cluster and a Redis of their own, stopped and killed while Atlaso works.

Every test here is marked `faults`. They run on a PostgreSQL pass of the suite (make test with
DATABASE_URL, as CI does) and are skipped on SQLite. Without PostgreSQL's server binaries or
redis-server they skip with a message saying what to install, except under CI=true, where they
fail: CI must run them. One cluster serves the folder; each test gets its own database on it,
made from a migrated template.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from tests.ci import cannot_run
from tests.faults.processes import Atlaso, ThrowawayPostgres, ThrowawayRedis, missing_binaries

HERE = Path(__file__).resolve().parent
TEMPLATE = "atlaso_template"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test in this folder `faults`, before `-m` selects."""
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.faults)


@pytest.fixture(scope="package")
def cluster() -> Iterator[ThrowawayPostgres]:
    """A throwaway PostgreSQL cluster with a migrated template database; removed at the end."""
    if not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        pytest.skip("fault tests need PostgreSQL: run with DATABASE_URL=postgres://… (CI does)")
    reason = missing_binaries()
    if reason:
        cannot_run(reason, which="fault tests")
    folder = Path(tempfile.mkdtemp(prefix="atlaso-faults-"))
    folder.chmod(0o755)
    postgres = ThrowawayPostgres(folder)
    try:
        postgres.init()
        postgres.execute(f"CREATE DATABASE {TEMPLATE}")
        migrated = Atlaso(folder, database_url=postgres.url(TEMPLATE)).manage(
            "migrate", "--no-input", "-v", "0"
        )
        assert migrated.returncode == 0, migrated.stderr[-3000:]
        yield postgres
    finally:
        if postgres.is_running():
            postgres.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def atlaso(cluster: ThrowawayPostgres, request: pytest.FixtureRequest) -> Iterator[Atlaso]:
    """Atlaso on a fresh database of its own (a copy of the template); its processes end with the test."""
    name = "t_" + re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:50]
    if not cluster.is_running():
        cluster.start()
    cluster.execute(f"DROP DATABASE IF EXISTS {name}")
    cluster.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
    folder = Path(tempfile.mkdtemp(prefix="atlaso-faults-app-"))
    app = Atlaso(folder, database_url=cluster.url(name))
    try:
        yield app
    finally:
        app.stop_all()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def redis() -> Iterator[ThrowawayRedis]:
    """A redis-server of the test's own, on a free port, keeping nothing on disk."""
    folder = Path(tempfile.mkdtemp(prefix="atlaso-faults-redis-"))
    server = ThrowawayRedis(folder)
    server.start()
    try:
        yield server
    finally:
        server.kill()
        shutil.rmtree(folder, ignore_errors=True)
