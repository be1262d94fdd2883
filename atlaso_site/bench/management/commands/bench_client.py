"""`bench_client`: what the `atlaso` Python client adds to the server's time, per call.

Against a running server, on kept-alive connections, it sends each request two ways in turn:
through the client (`user.recall(...)`, `user.add_many(...)`) and as the same request by bare
httpx with its JSON decoded. The bare request's wall time stands for the server's time (the
server, the network and httpx itself); the client's overhead is its wall time minus that,
taken pair by pair and then as a median. It also times the client against
`httpx.MockTransport` replaying the server's recorded answer: the client's own work with no
server at all (building the request, the retry loop, reading the answer into typed results).

Without `--key`, a key is made (and revoked at the end) in the database this command is
configured for, which must be the server's: run it with the server's DATABASE_URL.
"""

from __future__ import annotations

import json
import logging
import random
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from django.core.management.base import BaseCommand, CommandParser

from atlaso import AddItem, Memory, Scope, idempotency_key
from atlaso_site.bench.seed import sentence
from beliefs.services import api_key_create, api_key_revoke

RNG = random.Random(7)
QUERIES = ("retry timeout", "fraud score threshold", "embedding cache", "latency spike", "model drift")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


class Command(BaseCommand):
    help = "Measure the atlaso client's overhead per recall and per 1,000-item add_many against a server."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="the running server")
        parser.add_argument(
            "--key", help="an API key with read and write (default: one made and revoked here)"
        )
        parser.add_argument("--calls", type=int, default=1000, help="recalls each way (default 1000)")
        parser.add_argument(
            "--bulks", type=int, default=10, help="1,000-item add_many calls each way (default 10)"
        )
        parser.add_argument("--json", dest="json_path", help="also write the figures here as JSON")

    @contextmanager
    def _key(self, given: str | None) -> Iterator[str]:
        if given:
            yield given
            return
        key, secret = api_key_create(
            name="bench_client", channel_name="bench-client", tier_name="agent_own", actor="bench_client"
        )
        try:
            yield secret
        finally:
            api_key_revoke(key=key, actor="bench_client")

    def handle(self, *args: Any, **options: Any) -> None:
        logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request would drown the table
        with self._key(options["key"]) as key:
            figures = self._measure(options["url"], key, calls=options["calls"], bulks=options["bulks"])
        for line in self._table(figures):
            self.stdout.write(line)
        if options["json_path"]:
            with open(options["json_path"], "w") as out:
                json.dump(figures, out, indent=2)

    def _measure(self, url: str, key: str, *, calls: int, bulks: int) -> dict[str, Any]:
        owner = f"bench-client-{uuid.uuid4().hex[:8]}"
        headers = {"Authorization": f"Bearer {key}", "Accept": "application/json"}
        with (
            Memory(api_key=key, base_url=url, max_retries=0) as memory,
            httpx.Client(headers=headers) as bare,
        ):
            user = memory.for_user(owner)
            self._seed(user)
            recall_url = f"{url}/api/v1/users/{owner}/recall"

            def client_recall(n: int) -> None:
                user.recall(QUERIES[n % len(QUERIES)], limit=10)

            def bare_recall(n: int) -> None:
                bare.get(
                    recall_url, params={"q": QUERIES[n % len(QUERIES)], "limit": 10}
                ).raise_for_status().json()

            recall = self._pairs(client_recall, bare_recall, range(50), range(calls))
            recorded = bare.get(recall_url, params={"q": QUERIES[0], "limit": 10}).json()

            bulk_url = f"{url}/api/v1/users/{owner}/deposits/bulk"

            def rows(tag: str) -> list[AddItem]:
                return [
                    AddItem(
                        content=sentence(RNG),
                        idempotency_key=idempotency_key(tag, n),
                        scope=Scope(model=f"m{n % 7}"),
                    )
                    for n in range(1000)
                ]

            batches = {
                n: (rows(f"client-{n}-{uuid.uuid4()}"), rows(f"bare-{n}-{uuid.uuid4()}"))
                for n in range(bulks + 1)
            }
            # Bare httpx sends a body made beforehand: building it is the client's work, not the server's.
            bodies = {
                n: {"items": [item.to_dict() for item in bare_rows], "on_gate_reject": "skip"}
                for n, (_, bare_rows) in batches.items()
            }

            def client_bulk(n: int) -> None:
                user.add_many(batches[n][0])

            def bare_bulk(n: int) -> None:
                bare.post(bulk_url, json=bodies[n], timeout=60).raise_for_status().json()

            bulk = self._pairs(client_bulk, bare_bulk, range(1), range(1, bulks + 1))
            # The warm-up batch again: all replays, the same shape as a first write.
            bulk_recorded = bare.post(bulk_url, json=bodies[0], timeout=60).json()

        return {
            "owner": owner,
            "recall": recall | {"client_alone": self._alone(recorded, lambda u: u.recall(QUERIES[0]), calls)},
            "add_many_1000": bulk
            | {
                "client_alone": self._alone(bulk_recorded, lambda u: u.add_many(batches[0][0]), max(bulks, 5))
            },
        }

    def _seed(self, user: Any) -> None:
        """A few hundred deposits in bags of several claims, some in conflict, so hits carry flags."""
        items = []
        for n in range(300):
            polarity = ("positive", "negative", "open")[n % 3] if n % 10 == 0 else "open"
            scope = Scope(model=f"model-{n % 12}", dataset=f"set-{n % 5}", env="prod")
            words = f"{QUERIES[n % len(QUERIES)]} {sentence(RNG)}"
            items.append(AddItem(content=words, idempotency_key=idempotency_key("seed", user.user_id, n),
                                 polarity=polarity, evidence_grade="observed", scope=scope))  # fmt: skip
        user.add_many(items)

    def _pairs(
        self, client: Callable[[int], None], bare: Callable[[int], None], warm: range, measured: range
    ) -> dict[str, Any]:
        """Each call both ways in turn (which goes first alternates), after warm-up calls."""
        for i in warm:
            client(i)
            bare(i)
        client_times: list[float] = []
        bare_times: list[float] = []
        for turn, i in enumerate(measured):
            for call in (client, bare) if turn % 2 == 0 else (bare, client):
                started = time.perf_counter()
                call(i)
                (client_times if call is client else bare_times).append(time.perf_counter() - started)
        differences = [c - b for c, b in zip(client_times, bare_times, strict=True)]
        return {
            "calls": len(measured),
            "client_p50_s": statistics.median(client_times),
            "bare_p50_s": statistics.median(bare_times),
            "client_p99_s": percentile(client_times, 0.99),
            "bare_p99_s": percentile(bare_times, 0.99),
            "overhead_p50_s": statistics.median(differences),
        }

    def _alone(self, recorded: dict[str, Any], call: Callable[[Any], Any], n: int) -> dict[str, float]:
        """The client's own time per call, the server replaced by its recorded answer."""
        transport = httpx.MockTransport(lambda request: httpx.Response(200, json=recorded))
        with Memory(api_key="k", base_url="http://recorded.test", transport=transport) as memory:
            user = memory.for_user("recorded")
            for _ in range(min(n, 20)):
                call(user)
            times = []
            for _ in range(n):
                started = time.perf_counter()
                call(user)
                times.append(time.perf_counter() - started)
        return {"calls": n, "p50_s": statistics.median(times), "p99_s": percentile(times, 0.99)}

    def _table(self, figures: dict[str, Any]) -> list[str]:
        lines = ["what                         client p50   bare httpx p50   overhead p50   client alone p50"]
        for name, label in (("recall", "recall (10 hits)"), ("add_many_1000", "add_many (1,000 items)")):
            row = figures[name]
            lines.append(
                f"{label:<28} {ms(row['client_p50_s']):>11} {ms(row['bare_p50_s']):>16} "
                f"{ms(row['overhead_p50_s']):>14} {ms(row['client_alone']['p50_s']):>18}"
            )
        lines.append(
            f"(recall: {figures['recall']['calls']} calls each way; add_many: {figures['add_many_1000']['calls']}; "
            "overhead = the median of client − bare, pair by pair, sent in turn on kept connections)"
        )
        return lines
