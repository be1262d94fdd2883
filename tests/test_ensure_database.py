"""`make run` against a PostgreSQL server: the database DATABASE_URL names is made, or why not said.

Each case runs `manage.py ensure_database` as `make run` does, in a process of its own, against the
suite's PostgreSQL server with a database name (and, once, a role) of its own.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from django.db import connection
from psycopg import sql

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.postgres


def ensure_database(url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": url, "SECRET_KEY": "ensure-database-test"}
    return subprocess.run(
        [sys.executable, "manage.py", "ensure_database"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def server(on_postgres: None) -> Iterator[dict[str, str]]:
    """The suite's PostgreSQL server as the suite's role reaches it; drops what a test made there."""
    db = connection.settings_dict
    made: dict[str, list[str]] = {"databases": [], "roles": []}
    params = {
        "host": db["HOST"] or "127.0.0.1",
        "port": str(db["PORT"] or 5432),
        "user": db["USER"],
        "password": db["PASSWORD"],
    }
    yield {**params, "made": made}  # type: ignore[misc]
    with psycopg.connect(**params, dbname="postgres", autocommit=True) as admin:
        for name in made["databases"]:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        for role in made["roles"]:
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def url(server: dict, database: str, user: str | None = None, password: str | None = None) -> str:
    user = user or server["user"]
    password = server["password"] if password is None else password
    login = quote(user) + (f":{quote(password)}" if password else "")
    return f"postgres://{login}@{server['host']}:{server['port']}/{quote(database)}"


def database_exists(server: dict, name: str) -> bool:
    params = {k: server[k] for k in ("host", "port", "user", "password")}
    with psycopg.connect(**params, dbname="postgres") as admin:
        return admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None


def test_a_missing_database_is_created_once_and_then_left_alone(server: dict) -> None:
    name = f"atlaso_ensure_{uuid.uuid4().hex[:10]}"
    server["made"]["databases"].append(name)

    first = ensure_database(url(server, name))
    assert first.returncode == 0, first.stderr
    assert f"Created the PostgreSQL database {name!r}" in first.stdout
    assert database_exists(server, name)

    again = ensure_database(url(server, name))
    assert again.returncode == 0, again.stderr
    assert again.stdout == ""


def test_a_role_that_may_not_create_databases_is_told_how_to_go_on(server: dict) -> None:
    role, name = f"atlaso_nocreate_{uuid.uuid4().hex[:8]}", f"atlaso_ensure_{uuid.uuid4().hex[:10]}"
    params = {k: server[k] for k in ("host", "port", "user", "password")}
    with psycopg.connect(**params, dbname="postgres", autocommit=True) as admin:
        admin.execute(
            sql.SQL("CREATE ROLE {} LOGIN NOCREATEDB PASSWORD 'not-a-secret'").format(sql.Identifier(role))
        )
    server["made"]["roles"].append(role)
    server["made"]["databases"].append(name)

    done = ensure_database(url(server, name, user=role, password="not-a-secret"))

    assert done.returncode == 1
    assert f"the database {name!r} does not exist" in done.stderr
    assert f"{role!r} may not create it" in done.stderr
    assert "Traceback" not in done.stderr
    assert not database_exists(server, name)


def test_a_server_that_does_not_answer_is_named_without_a_traceback(server: dict) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dead = {**server, "host": "127.0.0.1", "port": str(port)}

    done = ensure_database(url(dead, "atlaso"))

    assert done.returncode == 1
    assert f"cannot connect to PostgreSQL at 127.0.0.1:{port} (DATABASE_URL)" in done.stderr
    assert "Traceback" not in done.stderr
