"""The processes a fault test starts, stops and kills.

Its own PostgreSQL cluster and Redis, and Atlaso itself (gunicorn as `make run` starts it, a
Celery worker, Celery beat) pointed at them.

Nothing here touches the suite's database or broker: every fault test has a database of its own
on the throwaway cluster, made from a migrated template, and talks to Atlaso over HTTP.
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.client import HTTPConnection
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for[T](read: Callable[[], T], done: Callable[[T], bool], *, timeout: float, what: str) -> T:
    """Poll `read()` every 0.1 s until `done` holds of it; fail saying what was awaited."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting {timeout:g} s for {what}; last seen: {value!r}")
        time.sleep(0.1)


def postgres_bin() -> Path | None:
    """The newest PostgreSQL server binaries under /usr/lib/postgresql/*/bin, if any."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    found = [folder for folder in found if (folder / "pg_ctl").exists()]
    return max(found, key=lambda folder: int(folder.parent.name)) if found else None


def missing_binaries() -> str | None:
    """Why the fault tests cannot run here, or None."""
    if postgres_bin() is None:
        return "fault tests need PostgreSQL's server binaries (/usr/lib/postgresql/*/bin/initdb): apt-get install postgresql"
    if shutil.which("redis-server") is None:
        return "fault tests need redis-server on PATH: apt-get install redis-server"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "fault tests run as root need a 'postgres' system user to run initdb as"
        if shutil.which("runuser") is None:
            return "fault tests run as root need runuser (util-linux) to run initdb as postgres"
    return None


class ThrowawayPostgres:
    """A PostgreSQL cluster in a temporary folder, on a free port, that a test may stop and start."""

    def __init__(self, folder: Path) -> None:
        self.bin = postgres_bin()
        assert self.bin is not None
        self.folder = folder
        self.data = folder / "data"
        self.log = folder / "postgres.log"
        self.port = free_port()
        # initdb refuses to run as root: then the cluster belongs to the postgres system user.
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            account = pwd.getpwnam("postgres")
            os.chown(folder, account.pw_uid, account.pw_gid)

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_postgres else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=60, cwd=self.folder)

    def init(self) -> None:
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                  "-E", "UTF8", "--no-sync")  # fmt: skip
        self.start()

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.folder}"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.log),
                  "-w", "-t", "60", "start")  # fmt: skip

    def stop(self) -> None:
        """Stop at once, as a crash would: every connection is cut, nothing is flushed politely."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def is_running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def url(self, name: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def execute(self, sql: str, params: tuple[Any, ...] = (), *, database: str = "postgres") -> list[tuple]:
        with psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname=database, autocommit=True
        ) as connection:
            cursor = connection.execute(sql, params)
            return cursor.fetchall() if cursor.description else []


class ThrowawayRedis:
    """A redis-server on a free port, keeping nothing on disk, that a test may kill and restart."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_for(self._answers, bool, timeout=20, what=f"redis-server on port {self.port}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


@dataclass
class Answer:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]


@dataclass
class Atlaso:
    """Atlaso's processes on one database of the throwaway cluster: start them, kill them, call it."""

    folder: Path
    database_url: str
    redis_url: str = ""
    extra_env: dict[str, str] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    port: int = 0

    @property
    def env(self) -> dict[str, str]:
        inherited = {
            k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "REDIS_", "CELERY_"))
        }
        return {
            **inherited,
            "DATABASE_URL": self.database_url,
            **({"REDIS_URL": self.redis_url} if self.redis_url else {}),
            "DEBUG": "false",
            "SECRET_KEY": "fault-tests-only-not-a-secret",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "ATLASO_VAR_DIR": str(self.folder / "var"),
            "LOG_LEVEL": "INFO",
            # One metrics folder for the test's web workers and Celery worker, as serve gives them.
            "PROMETHEUS_MULTIPROC_DIR": str(self.folder / "metrics"),
            **self.extra_env,
        }

    def django(self, code: str) -> Any:
        """Run `code` in a Django process on this database; it sets `result`, returned as JSON."""
        script = "import json, django\ndjango.setup()\n" + code + "\nprint('\\n' + json.dumps(result))\n"
        done = subprocess.run(
            [sys.executable, "-c", script],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise AssertionError(f"django script failed:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple]:
        """Rows of a query on this database, read directly (not through Atlaso)."""
        with psycopg.connect(self.database_url, autocommit=True) as connection:
            return connection.execute(query, params).fetchall()

    def manage(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip

    def _spawn(self, name: str, command: list[str]) -> subprocess.Popen:
        (self.folder / "var").mkdir(exist_ok=True)
        with open(self.folder / f"{name}.log", "ab") as log:
            process = subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.processes[name] = process
        return process

    def log(self, name: str) -> str:
        path = self.folder / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start_web(self) -> None:
        """gunicorn with the options `make run` gives it."""
        from atlaso_site.supervisor import commands

        self.port = free_port()
        self._spawn("web", commands("127.0.0.1", self.port)["web"])
        wait_for(self._serving, bool, timeout=60, what=f"gunicorn on port {self.port}")

    def _serving(self, name: str = "web") -> bool:
        if self.processes[name].poll() is not None:
            raise AssertionError(f"{name} exited:\n{self.log(name)[-3000:]}")
        try:
            return self.call("GET", "/tiers").status == 401
        except OSError:
            return False

    def start_worker(self, name: str = "worker", *, pool: str = "solo") -> subprocess.Popen:
        """A Celery worker that runs one job at a time.

        In its own process (the solo pool: kill -9 kills the job and the worker), or in one pool
        process (prefork, as `make run`: its main process lives on when the pool process is
        killed, and starts another).
        """
        offset = len(self.log(name))
        process = self._spawn(
            name,
            [sys.executable, "-m", "celery", "-A", "atlaso_site", "worker", "--pool", pool,
             *(["--concurrency", "1"] if pool == "prefork" else []),
             "--loglevel", "INFO", "--hostname", f"{name}@%h", "--without-gossip", "--without-mingle"],
        )  # fmt: skip

        def ready() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"the worker exited:\n{self.log(name)[-3000:]}")
            return " ready." in self.log(name)[offset:]

        wait_for(ready, bool, timeout=60, what=f"the Celery worker {name} to be ready")
        return process

    def start_beat(self) -> None:
        self._spawn(
            "beat",
            [sys.executable, "-m", "celery", "-A", "atlaso_site", "beat", "--loglevel", "INFO",
             "--schedule", str(self.folder / "celerybeat-schedule")],
        )  # fmt: skip

    def start_serve(self) -> subprocess.Popen:
        """`make run`'s foreground (atlaso_site.supervisor: gunicorn, a worker and beat, supervised)."""
        self.port = free_port()
        command = [
            sys.executable,
            "-m",
            "atlaso_site.supervisor",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        self._spawn("serve", command)
        wait_for(
            lambda: self._serving("serve"),
            bool,
            timeout=60,
            what=f"atlaso_site.supervisor on port {self.port}",
        )
        return self.processes["serve"]

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        process = self.processes.pop(name)
        if process.poll() is None:
            process.send_signal(sig)
        process.wait(timeout=20)

    def stop_all(self) -> None:
        """Stop what is left.

        gunicorn quickly (SIGINT, so it takes its workers along), serve as a person would
        (SIGTERM: it stops its children), the rest killed.
        """
        gentle = {"web": signal.SIGINT, "serve": signal.SIGTERM}
        for name in list(self.processes):
            process = self.processes[name]
            if process.poll() is None:
                process.send_signal(gentle.get(name, signal.SIGKILL))
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)
            del self.processes[name]

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        key: str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 30,
    ) -> Answer:
        """One request to /api/v1 on a fresh connection; OSError when nothing answers."""
        sent = {"Content-Type": "application/json", **(headers or {})}
        if key:
            sent["Authorization"] = f"Bearer {key}"
        connection = HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request(
                method, f"/api/v1{path}", body=None if body is None else json.dumps(body), headers=sent
            )
            response = connection.getresponse()
            raw = response.read()
        finally:
            connection.close()
        try:
            decoded = json.loads(raw) if raw else {}
        except ValueError:
            decoded = {"not_json": raw[:500].decode(errors="replace")}
        return Answer(response.status, decoded, {k.lower(): v for k, v in response.getheaders()})

    def wait_for_run(self, run_id: str, key: str, *, timeout: float = 90) -> dict[str, Any]:
        """Poll a job run until it ends; fail with the worker's log if it does not."""
        try:
            return wait_for(
                lambda: self.call("GET", f"/jobs/{run_id}", key=key).body,
                lambda run: run.get("status") in ("succeeded", "failed", "skipped"),
                timeout=timeout,
                what=f"job run {run_id} to end",
            )
        except AssertionError as error:
            logs = "\n".join(
                f"--- {name}\n{self.log(name)[-2500:]}" for name in ("worker", "worker-2", "beat")
            )
            raise AssertionError(f"{error}\n{logs}") from None
