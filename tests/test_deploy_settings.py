"""Deployment settings: ATLASO_TLS switches on every TLS setting, and the CSP the pages work under."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.core.management import call_command
from django.db import connection

from atlaso_site.supervisor import LIMIT_REQUEST_LINE, commands
from beliefs.services import api_key_create
from tests.cast import make_login

ROOT = Path(__file__).resolve().parents[1]
TLS_SETTINGS = (
    "SECURE_SSL_REDIRECT",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
)


def production_env(**extra: str) -> dict[str, str]:
    """The environment of a deployment: DEBUG off, a real key, a host name; the database the suite's."""
    env = {k: v for k, v in os.environ.items() if k not in {"ATLASO_TLS", "ATLASO_HSTS_SECONDS"}}
    env.update(
        DEBUG="false",
        SECRET_KEY="k" * 20 + "Z9!q-x7Rm2#vLp4$wN8&tY6*bH3@cJ5%dF1^",
        ALLOWED_HOSTS="atlaso.example",
    )
    env.update(extra)
    return env


def suite_database() -> dict[str, str]:
    """DATABASE_URL naming the suite's own PostgreSQL database, which exists while it runs.

    `check` asks the database server what it supports (stored generated columns), so it needs
    one that exists; the suite's DATABASE_URL names a database pytest never creates. With
    SQLite, `check` opens a file of its own.
    """
    if connection.vendor != "postgresql":
        return {}
    db = connection.settings_dict
    login = quote(db["USER"]) + (f":{quote(db['PASSWORD'])}" if db["PASSWORD"] else "")
    return {"DATABASE_URL": f"postgres://{login}@{db['HOST']}:{db['PORT'] or 5432}/{quote(db['NAME'])}"}


def check_deploy(**extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=production_env(**suite_database(), **extra),
        capture_output=True,
        text=True,
        timeout=120,
    )


def settings_under(**extra: str) -> dict[str, Any]:
    """The TLS settings as settings.py computes them from this environment."""
    code = f"import json; from atlaso_site import settings as s; print(json.dumps({{n: getattr(s, n) for n in {TLS_SETTINGS!r}}}))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=production_env(**extra),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_check_deploy_with_tls_on_prints_no_warning(db):
    done = check_deploy(ATLASO_TLS="true")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout
    assert "WARNINGS" not in done.stdout + done.stderr


def test_check_deploy_over_plain_http_names_what_atlaso_tls_would_switch_on(db):
    done = check_deploy()
    found = set(re.findall(r"security\.W\d{3}", done.stdout + done.stderr))
    assert done.returncode == 1 and found == {
        "security.W004",
        "security.W008",
        "security.W012",
        "security.W016",
    }


def test_a_malformed_atlaso_tls_stops_start_up_naming_it():
    done = check_deploy(ATLASO_TLS="sometimes")
    assert done.returncode != 0 and "ATLASO_TLS='sometimes' is not a boolean" in done.stderr


@pytest.fixture
def under_tls(settings: Any) -> dict[str, Any]:
    values = settings_under(ATLASO_TLS="true", ATLASO_HSTS_SECONDS="600")
    for name, value in values.items():
        setattr(settings, name, value)
    return values


def test_with_tls_on_plain_http_is_redirected_to_https(client, under_tls):
    response = client.get("/accounts/login/?next=/owners/")
    assert response.status_code == 301
    assert response["Location"] == "https://testserver/accounts/login/?next=/owners/"


def test_with_tls_on_cookies_are_secure_and_hsts_covers_subdomains(client, db, under_tls):
    page = client.get("/accounts/login/", secure=True)
    assert page.status_code == 200 and page.cookies["csrftoken"]["secure"]
    assert page["Strict-Transport-Security"] == "max-age=600; includeSubDomains; preload"
    client.force_login(make_login("reviewer"))
    overview = client.get("/", secure=True)
    assert overview.status_code == 200 and client.cookies["sessionid"]["secure"]


def test_with_tls_off_make_run_serves_plain_http_with_ordinary_cookies(client, db):
    assert settings_under() == dict.fromkeys(TLS_SETTINGS, False) | {"SECURE_HSTS_SECONDS": 0}
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and not page.cookies["csrftoken"]["secure"]
    assert "Strict-Transport-Security" not in page


def manage_shell(code: str, **extra: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", code],
        cwd=ROOT,
        env=production_env(**extra),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_with_database_pool_size_requests_share_a_psycopg_pool_instead_of_kept_connections(db, on_postgres):
    from django.db import connection

    db = connection.settings_dict
    url = f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    code = (
        "from django.db import connection; from deposits.models import Deposit; Deposit.objects.count(); "
        "print(type(connection.pool).__name__, connection.pool.max_size, connection.settings_dict['CONN_MAX_AGE'])"
    )
    assert manage_shell(code, DATABASE_URL=url, DATABASE_POOL_SIZE="3") == ["ConnectionPool", "3", "0"]
    assert manage_shell(
        code.replace("type(connection.pool).__name__, connection.pool.max_size", "connection.pool"),
        DATABASE_URL=url,
    ) == ["None", "60"]


# The Content-Security-Policy.


def directives(response) -> dict[str, list[str]]:
    policy = response["Content-Security-Policy"]
    return {name: values for name, *values in (part.split() for part in policy.split(";"))}


class Markup(HTMLParser):
    """What a page holds that a strict CSP refuses, and the links to follow."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: list[str] = []
        self.links: list[str] = []
        self.nonces: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        for name, value in attrs:
            if name.startswith("on"):
                self.refused.append(f"<{tag} {name}=…> (an inline event handler)")
            if value and value.strip().lower().startswith("javascript:"):
                self.refused.append(f"<{tag} {name}={value!r}>")
        if tag == "script":
            if named.get("src"):
                self.nonces.append(named.get("nonce") or "")
            elif named.get("type") != "application/json":
                self.refused.append("<script> without src (inline script)")
        if tag == "style":
            self.refused.append("<style> (an inline stylesheet)")
        if tag == "a" and (named.get("href") or "").startswith("/"):
            self.links.append((named["href"] or "").split("#")[0])


SKIPPED = ("/admin/", "/accounts/logout/", "/static/", "/api/")


def test_every_dashboard_page_is_served_under_the_policy_and_holds_nothing_it_refuses(client, db):
    """Follows every link from the overview (demo data loaded) and reads each page's markup."""
    call_command("load_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115
    api_key_create(name="agent <b>", channel_name="agent-a", tier_name="agent_own")
    client.force_login(make_login("superuser"))
    queue, seen, refused = ["/", "/provenance/", "/jobs/", "/health/"], set(), []
    while queue and len(seen) < 60:
        path = queue.pop(0)
        if path in seen or path.startswith(SKIPPED):
            continue
        seen.add(path)
        response = client.get(path)
        if response.status_code != 200 or not response["Content-Type"].startswith("text/html"):
            continue
        policy = directives(response)
        assert policy["script-src"][0] == "'self'" and "'unsafe-inline'" not in policy["script-src"], path
        markup = Markup()
        markup.feed(response.content.decode())
        refused += [f"{path}: {what}" for what in markup.refused]
        # django-htmx's script tag carries the nonce the header names.
        assert all(f"'nonce-{nonce}'" in policy["script-src"] for nonce in markup.nonces if nonce), path
        queue += markup.links
    visited = {re.sub(r"[^/]+/$", "…/", path) for path in seen}
    assert len(seen) >= 12 and {"/owners/…/", "/conflicts/", "/provenance/"} <= visited | seen
    assert not refused, refused


def test_the_policy_allows_nothing_but_this_server(client):
    policy = directives(client.get("/accounts/login/"))
    assert policy["default-src"] == ["'self'"] and policy["object-src"] == ["'none'"]
    assert policy["style-src"] == ["'self'"] and policy["img-src"] == ["'self'", "data:"]
    assert policy["frame-ancestors"] == ["'none'"] and policy["base-uri"] == ["'none'"]
    assert all("http" not in value for values in policy.values() for value in values)


def test_the_api_docs_are_served_under_the_same_policy_with_no_inline_script(client):
    response = client.get("/api/v1/docs")
    markup = Markup()
    markup.feed(response.content.decode())
    assert directives(response)["script-src"][0] == "'self'" and not markup.refused


# Serving: gunicorn as `make run` starts it.


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def serving(**env: str) -> Iterator[int]:
    """gunicorn with the options `make run` gives it, on a free port, until a worker answers."""
    port = free_port()
    process = subprocess.Popen(
        commands("127.0.0.1", port)["web"],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        # Until a worker answers: the master listens before its workers have loaded Django.
        while status_line(port, b"GET /api/v1/openapi.json HTTP/1.1")[0] not in {
            "HTTP/1.1 200 OK",
            "HTTP/1.1 301 Moved Permanently",
        }:
            assert process.poll() is None and time.monotonic() < deadline, "gunicorn did not start"
            time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def gunicorn() -> Iterator[int]:
    with serving() as port:
        yield port


def status_line(port: int, request_line: bytes) -> tuple[str, float]:
    """Send one request; the first line of the answer and the seconds until it came.

    The request is sent from a thread, so the answer is read as soon as it comes, while a long
    line may still be on its way (a refusing server closes without reading it all).
    """
    try:
        connection = socket.create_connection(("127.0.0.1", port), timeout=30)
    except ConnectionRefusedError:
        return "", 0.0
    with connection:

        def send() -> None:
            with contextlib.suppress(OSError):
                connection.sendall(request_line + b"\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")

        sender = threading.Thread(target=send)
        started = time.monotonic()
        sender.start()
        answer = b""
        with contextlib.suppress(OSError):
            while b"\r\n" not in answer and (chunk := connection.recv(4096)):
                answer += chunk
        seconds = time.monotonic() - started
        with contextlib.suppress(OSError):  # ends the sender's sendall, if the server has not
            connection.shutdown(socket.SHUT_RDWR)
        sender.join()
        return answer.split(b"\r\n", 1)[0].decode(), seconds


def test_gunicorn_refuses_a_10_mb_request_line_at_once_and_goes_on_serving(gunicorn):
    line, seconds = status_line(gunicorn, b"GET /api/v1/openapi.json?q=" + b"a" * 10_000_000 + b" HTTP/1.1")
    assert line == "HTTP/1.1 414 URI Too Long" and seconds < 2, (line, seconds)
    line, _ = status_line(gunicorn, b"GET /api/v1/openapi.json HTTP/1.1")
    assert line == "HTTP/1.1 200 OK"


def test_gunicorn_passes_a_request_line_of_8190_bytes_to_the_application(gunicorn):
    start, end = b"GET /api/v1/openapi.json?pad=", b" HTTP/1.1"
    longest = start + b"a" * (LIMIT_REQUEST_LINE - len(start) - len(end)) + end
    # The application answers it: the page, or the API's own 422 for a parameter it judges too long.
    answered = status_line(gunicorn, longest)[0]
    assert len(longest) == 8190 and answered in {"HTTP/1.1 200 OK", "HTTP/1.1 422 Unprocessable Content"}
    assert status_line(gunicorn, longest.replace(b"=", b"=a"))[0] == "HTTP/1.1 414 URI Too Long"


def answer_head(port: int, *headers: bytes) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        request = b"\r\n".join(
            [b"GET /api/v1/openapi.json HTTP/1.1", b"Host: 127.0.0.1", b"Connection: close", *headers]
        )
        connection.sendall(request + b"\r\n\r\n")
        answer = b""
        while b"\r\n\r\n" not in answer and (chunk := connection.recv(4096)):
            answer += chunk
        return answer.split(b"\r\n\r\n", 1)[0].decode()


def test_behind_a_trusted_proxy_https_is_believed_and_from_anyone_else_it_is_not():
    with serving(ATLASO_TLS="true") as port:
        assert answer_head(port).startswith("HTTP/1.1 301 Moved Permanently")
        proxied = answer_head(port, b"X-Forwarded-Proto: https")
        assert (
            proxied.startswith("HTTP/1.1 200 OK") and "Strict-Transport-Security: max-age=31536000" in proxied
        )
    # The same header from an address that is not the proxy's is ignored.
    with serving(ATLASO_TLS="true", FORWARDED_ALLOW_IPS="10.9.8.7") as port:
        assert answer_head(port, b"X-Forwarded-Proto: https").startswith("HTTP/1.1 301 Moved Permanently")


def test_postgresql_statements_are_bound_on_the_server_unless_turned_off(monkeypatch):
    from atlaso_site.settings import database_from_url

    url = "postgres://postgres@127.0.0.1:5432/atlaso"
    monkeypatch.delenv("DATABASE_SERVER_SIDE_BINDING", raising=False)
    assert database_from_url(url)["OPTIONS"]["server_side_binding"] is True
    monkeypatch.setenv("DATABASE_SERVER_SIDE_BINDING", "false")
    assert database_from_url(url)["OPTIONS"]["server_side_binding"] is False


def test_a_statement_a_connection_repeats_is_prepared_and_planned_for_each_executions_values(db, on_postgres):
    """Parsed once, never run on a generic plan: for recall's reads one doubled the latency."""
    from django.db import connection

    sql = "SELECT count(*) FROM deposits_deposit WHERE user_id = %s AND search_vector @@ to_tsquery(%s)"
    with connection.cursor() as cursor:
        for run in range(12):
            cursor.execute(sql, [f"owner-{run}", "threshold"])
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
            ["%search_vector @@ to_tsquery($2)%"],
        )
        # Prepared after its 5th run: the 6th to the 12th each planned for their own values.
        assert cursor.fetchall() == [(0, 7)]


def test_preparing_can_be_turned_off_for_a_pooler_that_cannot_keep_prepared_statements(monkeypatch):
    from atlaso_site.settings import database_from_url

    url = "postgres://postgres@127.0.0.1:5432/atlaso"
    monkeypatch.delenv("DATABASE_PREPARE_THRESHOLD", raising=False)
    assert database_from_url(url)["OPTIONS"]["prepare_threshold"] == 5
    monkeypatch.setenv("DATABASE_PREPARE_THRESHOLD", "0")
    assert database_from_url(url)["OPTIONS"]["prepare_threshold"] is None
