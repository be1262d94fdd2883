"""`loadtest`: the mixed API workload against a running server, then proof that no write was lost or doubled.

`--clients` threads, each with its own keep-alive connection, send for `--seconds` a mix of
single adds with an Idempotency-Key, bulks of 50, contradicts, recalls, and deliberate retries
of writes already acknowledged. Then every owner's deposits are read back through the API:
each acknowledged write must be there exactly once with the id it was acknowledged with, no
write may be there twice, and every retry must have replayed (200, `is_idempotent_replay`, the
same ids). It prints throughput, p50/p99 per kind and overall and the count of each status
class, and exits 1 on any 5xx, transport error, unexpected 4xx, lost or doubled write, or retry
that did not replay.

Without `--key`, the key is created (and revoked at the end) in the database this command is
configured for, which must be the server's: run it with the server's DATABASE_URL. The owners
are new each run (`loadtest-<run>-<n>`), so runs never mix; their deposits stay.
"""

from __future__ import annotations

import http.client
import json
import math
import random
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.core.management.base import BaseCommand, CommandError, CommandParser

from atlaso_site.access.models import ApiKey
from atlaso_site.bench.seed import VOCABULARY, sentence
from beliefs.services import api_key_create, api_key_revoke
from deposits.domain.idempotency import idempotency_key

# What one client request is, by weight. `replay` resends a write this client already saw
# acknowledged (a single add, a contradict or a bulk), byte for byte, key included.
MIX: dict[str, int] = {"add": 40, "recall": 36, "contradict": 10, "replay": 10, "bulk": 4}
BULK_SIZE = 50
POLARITY_GRADES = (("positive", "observed"), ("negative", "observed"), ("cautionary", "replicated"), ("open", "anecdotal"))  # fmt: skip
MODELS = ("gpt-5", "claude-4", "llama-4", "gemini-3")
DATASETS = ("support-tickets", "fraud-eval", "billing")
ENVS = ("prod", "staging")
# A reused keep-alive connection the server has closed fails before any answer: sent again once
# on a new connection. Safe for every request here: writes carry an idempotency key.
STALE_CONNECTION = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)
LIST_PAGE = 200


@dataclass
class Answer:
    status: int
    body: Any
    seconds: float


class Connection:
    """One client's keep-alive HTTP connection to the server, with its Bearer key."""

    def __init__(self, url: str, secret: str, timeout: float) -> None:
        parts = urlsplit(url)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise CommandError(f"--url {url!r} is not an http(s) URL, e.g. http://127.0.0.1:8000")
        connection_class = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        self._connection = connection_class(parts.hostname, parts.port, timeout=timeout)
        self._prefix = parts.path.rstrip("/") + "/api/v1"
        self._headers = {"Authorization": f"Bearer {secret}", "Accept": "application/json"}
        self._used = False
        self.reconnects = 0

    def send(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> Answer:
        all_headers = {**self._headers, **(headers or {})}
        if body is not None:
            all_headers["Content-Type"] = "application/json"
        started = time.perf_counter()
        try:
            status, raw = self._exchange(method, self._prefix + path, body, all_headers)
        except STALE_CONNECTION:
            if not self._used:
                raise
            self._connection.close()
            self.reconnects += 1
            status, raw = self._exchange(method, self._prefix + path, body, all_headers)
        seconds = time.perf_counter() - started
        self._used = True
        try:
            decoded = json.loads(raw) if raw else None
        except ValueError:
            decoded = {"undecodable": raw[:200].decode("utf-8", "replace")}
        return Answer(status, decoded, seconds)

    def _exchange(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes]:
        self._connection.request(method, path, body=body, headers=headers)
        response = self._connection.getresponse()
        return response.status, response.read()

    def close(self) -> None:
        self._connection.close()


@dataclass
class Write:
    """A write the server acknowledged: the request as sent (to retry it) and the ids it answered."""

    kind: str
    path: str
    body: bytes
    headers: dict[str, str]
    ids: dict[str, str]  # task_id -> deposit id


@dataclass
class ClientRecord:
    """What one client saw; merged after the run, so clients share no lock while they send."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter[str] = field(default_factory=Counter)
    kind_statuses: Counter[tuple[str, str]] = field(default_factory=Counter)
    acknowledged: dict[str, tuple[str, str]] = field(default_factory=dict)  # task_id -> (owner, id)
    replays_checked: int = 0
    replays_failed: int = 0
    reconnects: int = 0
    problems: list[str] = field(default_factory=list)


def status_class(status: int) -> str:
    return f"{status // 100}xx"


def percentile(values: list[float], share: float) -> float:
    """Nearest rank: the smallest value with at least `share` of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


class Client:
    """One simulated agent: picks a request from MIX, sends it, and records what came back."""

    def __init__(self, number: int, run: str, owners: list[str], connection: Connection, seed: int) -> None:
        self.number = number
        self.run = run
        self.owners = owners
        self.connection = connection
        self.rng = random.Random(seed * 1000 + number)
        self.record = ClientRecord()
        self.written: list[Write] = []
        self.ids_by_owner: dict[str, list[str]] = defaultdict(list)
        self.sequence = 0

    def run_until(self, deadline: float) -> ClientRecord:
        kinds, weights = list(MIX), list(MIX.values())
        try:
            while time.monotonic() < deadline:
                kind = self.rng.choices(kinds, weights)[0]
                if kind == "replay" and not self.written:
                    kind = "add"
                if kind == "contradict" and not self.ids_by_owner:
                    kind = "add"
                try:
                    getattr(self, kind)()
                except (OSError, http.client.HTTPException) as error:
                    self.record.statuses["transport error"] += 1
                    self.record.kind_statuses[(kind, "transport error")] += 1
                    self.record.problems.append(f"{kind}: {type(error).__name__}: {error}")
                    self.connection.close()
        finally:
            self.record.reconnects = self.connection.reconnects
            self.connection.close()
        return self.record

    # The requests.

    def add(self) -> None:
        owner = self.rng.choice(self.owners)
        token, fields = self._deposit_fields()
        self._write(
            "add", owner, f"/users/{owner}/deposits", fields, {"Idempotency-Key": self._key(token)}, 201
        )

    def contradict(self) -> None:
        owner = self.rng.choice(list(self.ids_by_owner))
        token, fields = self._deposit_fields()
        del fields["scope"]  # a correction lands in the bag of what it corrects
        fields["contradicts"] = [self.rng.choice(self.ids_by_owner[owner])]
        fields["reason"] = "re-measured: " + sentence(self.rng)
        headers = {"Idempotency-Key": self._key(token)}
        self._write("contradict", owner, f"/users/{owner}/contradict", fields, headers, 201)

    def bulk(self) -> None:
        owner = self.rng.choice(self.owners)
        items = []
        for _ in range(BULK_SIZE):
            token, fields = self._deposit_fields()
            items.append({**fields, "idempotency_key": self._key(token)})
        self._write(
            "bulk",
            owner,
            f"/users/{owner}/deposits/bulk",
            {"items": items, "on_gate_reject": "skip"},
            {},
            200,
        )

    def recall(self) -> None:
        owner = self.rng.choice(self.owners)
        words = " ".join(self.rng.choices(VOCABULARY[:80], k=self.rng.randint(1, 3)))
        answer = self._send("recall", "GET", f"/users/{owner}/recall?{urlencode({'q': words, 'limit': 10})}")
        if answer.status == 200 and answer.body.get("kind") != "search_results":
            self.record.problems.append(f"recall answered 200 without search results: {answer.body}")

    def replay(self) -> None:
        write = self.rng.choice(self.written)
        answer = self._send("replay", "POST", write.path, write.body, write.headers)
        if answer.status != 200:
            return
        self.record.replays_checked += 1
        if write.kind == "bulk":
            again = {item["task_id"]: item["id"] for item in answer.body["duplicates"]}
            fresh = answer.body["committed"]
            if again != write.ids or fresh:
                self.record.replays_failed += 1
                self.record.problems.append(
                    f"a retried bulk did not replay: {len(fresh)} committed anew, "
                    f"{len(again)} of {len(write.ids)} replayed with the same ids"
                    if fresh
                    else f"a retried bulk replayed other ids than it was acknowledged with: {write.path}"
                )
            return
        deposit = answer.body["deposit"]
        expected = next(iter(write.ids.values()))
        if not answer.body.get("is_idempotent_replay") or deposit["id"] != expected:
            self.record.replays_failed += 1
            self.record.problems.append(
                f"a retried {write.kind} did not replay: is_idempotent_replay="
                f"{answer.body.get('is_idempotent_replay')}, id {deposit['id']} (acknowledged as {expected})"
            )

    # Helpers.

    def _deposit_fields(self) -> tuple[str, dict[str, Any]]:
        """A new deposit that passes the gate (narrow scope with env); task_id names it for the check."""
        self.sequence += 1
        token = f"{self.run}-{self.number}-{self.sequence}"
        polarity, grade = self.rng.choice(POLARITY_GRADES)
        return token, {
            "content": sentence(self.rng),
            "polarity": polarity,
            "evidence_grade": grade,
            "scope": {
                "model": self.rng.choice(MODELS),
                "dataset": self.rng.choice(DATASETS),
                "env": self.rng.choice(ENVS),
            },
            "task_id": token,
        }

    def _key(self, token: str) -> str:
        return idempotency_key("loadtest", token)

    def _send(
        self,
        kind: str,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        answer = self.connection.send(method, path, body, headers)
        self.record.latencies[kind].append(answer.seconds)
        outcome = status_class(answer.status)
        self.record.statuses[outcome] += 1
        self.record.kind_statuses[(kind, outcome)] += 1
        if answer.status >= 400:
            error = answer.body.get("error", answer.body) if isinstance(answer.body, dict) else answer.body
            self.record.problems.append(
                f"{kind} {method} {path.split('?')[0]} answered {answer.status}: {error}"
            )
        return answer

    def _write(
        self, kind: str, owner: str, path: str, fields: dict[str, Any], headers: dict[str, str], created: int
    ) -> None:
        body = json.dumps(fields).encode()
        answer = self._send(kind, "POST", path, body, headers)
        if kind == "bulk":
            if answer.status != 200:
                return
            written = answer.body["committed"] + answer.body["duplicates"]
            for failure in answer.body["failed"]:
                self.record.problems.append(f"a bulk item was refused: {failure['error']}")
            ids = {item["task_id"]: item["id"] for item in written}
        else:
            # 200 is a replay: right after a stale connection was retried, the first try had landed.
            if answer.status not in (created, 200):
                return
            ids = {fields["task_id"]: answer.body["deposit"]["id"]}
        for token, deposit_id in ids.items():
            self.record.acknowledged[token] = (owner, deposit_id)
            self.ids_by_owner[owner].append(deposit_id)
        self.written.append(Write(kind, path, body, headers, ids))


@dataclass
class ReadBack:
    """Every deposit of the run's owners as the server lists them: task_id -> ids stored with it."""

    ids: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    count: int = 0
    problems: list[str] = field(default_factory=list)


def read_back(connection: Connection, owner: str, run: str) -> ReadBack:
    """Page through one owner's deposits (newest first) and index this run's by task_id."""
    result = ReadBack()
    offset = 0
    while True:
        query = urlencode({"limit": LIST_PAGE, "offset": offset})
        answer = connection.send("GET", f"/users/{owner}/deposits?{query}")
        if answer.status != 200:
            result.problems.append(f"reading back {owner} answered {answer.status}: {answer.body}")
            return result
        for item in answer.body["items"]:
            result.count += 1
            if (item.get("task_id") or "").startswith(f"{run}-"):
                result.ids[item["task_id"]].append(item["id"])
        offset += LIST_PAGE
        if offset >= answer.body["total"] or not answer.body["items"]:
            return result


def verify(
    acknowledged: dict[str, tuple[str, str]], stored: dict[str, list[str]]
) -> tuple[list[str], list[str]]:
    """(lost, doubled): acknowledged writes not stored once with their id, and writes stored twice."""
    lost = []
    for token, (owner, deposit_id) in sorted(acknowledged.items()):
        ids = stored.get(token, [])
        if deposit_id not in ids:
            lost.append(f"{owner}: deposit {deposit_id} (task_id {token}) was acknowledged but is not stored")
    doubled = [
        f"task_id {token} is stored {len(ids)} times: {', '.join(sorted(ids))}"
        for token, ids in sorted(stored.items())
        if len(ids) > 1
    ]
    return lost, doubled


def merged(records: list[ClientRecord]) -> ClientRecord:
    """What every client saw, as one record."""
    total = ClientRecord()
    for record in records:
        for kind, values in record.latencies.items():
            total.latencies[kind].extend(values)
        total.statuses.update(record.statuses)
        total.kind_statuses.update(record.kind_statuses)
        total.acknowledged.update(record.acknowledged)
        total.problems.extend(record.problems)
        total.replays_checked += record.replays_checked
        total.replays_failed += record.replays_failed
        total.reconnects += record.reconnects
    return total


def _statuses_text(classes: Counter[str]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(classes.items()))


def _latency_row(kind: str, values: list[float], classes: Counter[str], elapsed: float) -> str:
    return (
        f"{kind:<12}{len(values):>10}{len(values) / elapsed:>9.1f}{percentile(values, 0.5) * 1000:>9.1f}"
        f"{percentile(values, 0.99) * 1000:>9.1f}{max(values) * 1000:>9.1f}  " + _statuses_text(classes)
    )


def latency_table(seen: ClientRecord, elapsed: float) -> list[str]:
    """The report's table, after a blank line: each kind sent, then all of them together.

    Each row has its requests, rate, latencies and status classes.
    """
    lines = [f"\n{'kind':<12}{'requests':>10}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}  statuses"]
    for kind in MIX:
        if values := seen.latencies.get(kind, []):
            classes = Counter({c: n for (k, c), n in seen.kind_statuses.items() if k == kind})
            lines.append(_latency_row(kind, values, classes, elapsed))
    if every := [value for values in seen.latencies.values() for value in values]:
        lines.append(_latency_row("overall", every, seen.statuses, elapsed))
    return lines


def totals(seen: ClientRecord, elapsed: float, listed: int, lost: list[str], doubled: list[str]) -> list[str]:
    """The report's closing lines: throughput and status classes, then the writes checked."""
    requests = sum(len(values) for values in seen.latencies.values())
    acknowledged = len(seen.acknowledged)
    return [
        f"\n{elapsed:.1f} s, {requests / elapsed:.1f} requests/s; status classes: "
        + _statuses_text(seen.statuses)
        + f"; stale connections sent again: {seen.reconnects}",
        f"writes acknowledged: {acknowledged} deposits ({acknowledged / elapsed:.0f}/s); "
        f"read back: {listed} deposits; lost: {len(lost)}; stored twice: {len(doubled)}; "
        f"retries replayed as acknowledged: {seen.replays_checked - seen.replays_failed} of {seen.replays_checked}",
    ]


class Command(BaseCommand):
    help = "Drive the mixed API workload against a running server, then check no write was lost or doubled."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="the server's base URL")
        parser.add_argument("--clients", type=int, default=16, help="concurrent clients (threads)")
        parser.add_argument("--seconds", type=float, default=60.0, help="how long the clients send")
        parser.add_argument("--owners", type=int, default=32, help="memory owners the clients share")
        parser.add_argument(
            "--key", default="", help="an API key with read and write; default: create one for the run"
        )
        parser.add_argument("--timeout", type=float, default=30.0, help="seconds one request may take")
        parser.add_argument("--seed", type=int, default=1, help="the workload's random seed")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["clients"] < 1 or options["seconds"] <= 0 or options["owners"] < 1:
            raise CommandError("--clients and --owners must be at least 1 and --seconds above 0")
        run = uuid.uuid4().hex[:8]
        owners = [f"loadtest-{run}-{n:03d}" for n in range(options["owners"])]
        with self._api_key(options["key"], run) as secret:
            records, elapsed = self._load(run, owners, secret, options)
            self.stdout.write(f"read back: {len(owners)} owners' deposits")
            stored, listed, read_problems = self._read_back(run, owners, secret, options)
        self._report(records, elapsed, stored, listed, read_problems, options)

    @contextmanager
    def _api_key(self, given: str, run: str) -> Iterator[str]:
        if given:
            yield given
            return
        key, secret = api_key_create(
            name=f"loadtest {run}",
            channel_name="loadtest",
            tier_name="agent_own",
            permissions=["read", "write"],
            user_prefix=f"loadtest-{run}-",
        )
        try:
            yield secret
        finally:
            api_key_revoke(key=ApiKey.objects.get(pk=key.pk))

    def _load(
        self, run: str, owners: list[str], secret: str, options: dict[str, Any]
    ) -> tuple[list[ClientRecord], float]:
        clients = [
            Client(n, run, owners, Connection(options["url"], secret, options["timeout"]), options["seed"])
            for n in range(options["clients"])
        ]
        self.stdout.write(
            f"loadtest {run}: {len(clients)} clients for {options['seconds']:g} s against {options['url']} "
            f"({len(owners)} owners; mix {', '.join(f'{k} {w}%' for k, w in MIX.items())}; bulks of {BULK_SIZE})"
        )
        started, cpu = time.monotonic(), time.process_time()
        deadline = started + options["seconds"]
        records: list[ClientRecord] = []
        threads = [
            threading.Thread(
                target=lambda c=client: records.append(c.run_until(deadline)), name=f"client-{client.number}"
            )
            for client in clients
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        # The clients share the machine with the server when both run on it: say how much they took.
        self.stdout.write(
            f"clients' own CPU: {time.process_time() - cpu:.1f} s in {elapsed:.1f} s "
            f"({(time.process_time() - cpu) / elapsed:.0%} of one core)"
        )
        return records, elapsed

    def _read_back(
        self, run: str, owners: list[str], secret: str, options: dict[str, Any]
    ) -> tuple[dict[str, list[str]], int, list[str]]:
        def one(owner: str) -> ReadBack:
            connection = Connection(options["url"], secret, options["timeout"])
            try:
                return read_back(connection, owner, run)
            finally:
                connection.close()

        stored: dict[str, list[str]] = defaultdict(list)
        listed, problems = 0, []
        with ThreadPoolExecutor(max_workers=min(8, options["clients"])) as pool:
            for result in pool.map(one, owners):
                for token, ids in result.ids.items():
                    stored[token].extend(ids)
                listed += result.count
                problems.extend(result.problems)
        return stored, listed, problems

    def _report(
        self,
        records: list[ClientRecord],
        elapsed: float,
        stored: dict[str, list[str]],
        listed: int,
        read_problems: list[str],
        options: dict[str, Any],
    ) -> None:
        seen = merged(records)
        for line in latency_table(seen, elapsed):
            self.stdout.write(line)
        lost, doubled = verify(seen.acknowledged, stored)
        for line in totals(seen, elapsed, listed, lost, doubled):
            self.stdout.write(line)
        failures = [*lost, *doubled, *read_problems, *seen.problems]
        for line in failures[:20]:
            self.stderr.write(f"  {line}")
        if len(failures) > 20:
            self.stderr.write(f"  … and {len(failures) - 20} more")
        if failures or seen.statuses["5xx"] or seen.statuses["transport error"]:
            raise CommandError(
                f"{seen.statuses['5xx']} answers 5xx, {seen.statuses['transport error']} transport errors, "
                f"{seen.statuses['4xx']} answers 4xx, {len(lost)} lost, {len(doubled)} stored twice, "
                f"{len(failures) - len(lost) - len(doubled)} other problems"
            )
        self.stdout.write(self.style.SUCCESS("every acknowledged write is stored exactly once; no 5xx"))
