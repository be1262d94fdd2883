"""Atlaso itself, served for the client's tests: gunicorn as `make run` starts it, on a free port.

It runs on a database of its own, made and migrated here (with `DATABASE_URL`, PostgreSQL's
`<name>_client`, dropped and made anew; else SQLite in a temporary folder), so nothing the
client writes reaches the suite's test database, and keys come from `create_api_key`, as an
operator makes them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _fresh_postgres(url: str) -> str:
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    name = parts.path.lstrip("/") + "_client"
    with psycopg.connect(parts._replace(path="/postgres", query="").geturl(), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return parts._replace(path="/" + name).geturl()


@dataclass
class ServedAtlaso:
    """One served Atlaso: its URL, its keys by name, its log; `stop()` ends it."""

    folder: Path
    database_url: str
    port: int = 0
    keys: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        inherited = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("DATABASE_", "REDIS_", "CELERY_", "ATLASO_", "SECRET_KEY"))
        }
        return {
            **inherited,
            "DATABASE_URL": self.database_url,
            "DEBUG": "false",
            "SECRET_KEY": "client-tests-only-not-a-secret",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "ATLASO_VAR_DIR": str(self.folder / "var"),
            # Recall by words, as the client's tests pin it (tests/deposits/meaning has the model).
            "ATLASO_EMBEDDER": "none",
        }

    @classmethod
    def start(cls, folder: Path) -> ServedAtlaso:
        suite_url = os.environ.get("DATABASE_URL", "")
        database_url = _fresh_postgres(suite_url) if suite_url else f"sqlite:///{folder / 'client.sqlite3'}"
        served = cls(folder=folder, database_url=database_url)
        served.manage("migrate", "--no-input", "-v", "0")
        served._serve()
        return served

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        if done.returncode != 0:
            raise AssertionError(f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")
        return done.stdout

    def make_key(self, name: str, *perms: str, prefix: str = "", tier: str = "agent_own") -> str:
        """A key made by `create_api_key`, as an operator would; its secret is stdout's last line."""
        args = ["create_api_key", "--name", name, "--channel", name, "--tier", tier]
        for perm in perms:
            args += ["--perm", perm]
        if prefix:
            args += ["--user-prefix", prefix]
        secret = self.manage(*args).strip().splitlines()[-1]
        self.keys[name] = secret
        return secret

    def _serve(self) -> None:
        # gunicorn exactly as `make run` starts it (atlaso_site.supervisor), with this server's env.
        code = (
            "import os, sys\nfrom atlaso_site.supervisor import commands\n"
            "web = commands('127.0.0.1', int(sys.argv[1]))['web']\nos.execv(web[0], web)\n"
        )
        self.port = free_port()
        (self.folder / "var").mkdir(parents=True, exist_ok=True)
        log = open(self.folder / "web.log", "ab")  # noqa: SIM115 (the server holds it open)
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, str(self.port)], cwd=ROOT, env=self.env, stdout=log, stderr=log
        )
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"gunicorn exited:\n{self.log()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/api/v1/tiers", timeout=1).status_code == 401:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"gunicorn did not answer within 60 s:\n{self.log()[-3000:]}")
            time.sleep(0.1)

    def log(self) -> str:
        path = self.folder / "web.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
