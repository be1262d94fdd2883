"""`bench_client` runs end to end against a served Atlaso and prints its table.

The numbers are read by people, in docs/BENCHMARKS.md; nothing here times anything.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from tests.client.served import ServedAtlaso

pytestmark = pytest.mark.once


def test_it_measures_recall_and_a_bulk_both_ways_and_writes_json(served: ServedAtlaso, tmp_path):
    out = StringIO()
    figures = tmp_path / "client.json"
    call_command("bench_client", "--url", served.url, "--key", served.keys["client-rw"], "--calls", "5",
                 "--bulks", "1", "--json", str(figures), stdout=out)  # fmt: skip
    table = out.getvalue().splitlines()
    assert table[0].split() == [
        "what",
        "client",
        "p50",
        "bare",
        "httpx",
        "p50",
        "overhead",
        "p50",
        "client",
        "alone",
        "p50",
    ]
    assert table[1].startswith("recall (10 hits)") and table[2].startswith("add_many (1,000 items)")
    written = json.loads(figures.read_text())
    assert written["recall"]["calls"] == 5 and written["add_many_1000"]["calls"] == 1
    assert written["recall"]["client_alone"]["p50_s"] > 0
