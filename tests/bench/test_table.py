"""The bench's table over runs and store sizes, from fixed figures."""

from __future__ import annotations

from atlaso_site.bench.table import figure, markdown_table, per_query_table, spread, store_name, summarize


def row(key: str, value: float, floor: float | None = None, ok: bool = True) -> dict:
    return {
        "key": key,
        "label": f"{key} label",
        "what": f"{key} at this size",
        "value": f"{value} ms",
        "figures": [figure("p50", value, "ms")],
        "target": "",
        "floor": "",
        **({"floor_figures": [figure("raw SQL", floor, "ms")]} if floor is not None else {}),
        "ok": ok,
    }


def report(deposits: int, owners: int, values: list[float]) -> dict:
    return {
        "store_deposits": deposits,
        "store_owners": owners,
        "database_bytes": 750 * 2**20,
        "owner": {"user_id": "bench-00001", "deposits": 102_191, "chosen": "the largest"},
        "runs": [
            {
                "load_average": 1.5,
                "rows": [row("recall", value, floor=value / 2), row("pages", 40.0)],
                "recall_per_query": [
                    {"query": "model", "matching_bags": 700, "recall_ms": value, "floor_ms": 9.0}
                ],
            }
            for value in values
        ],
    }


def test_a_spread_reads_min_median_max_and_one_number_when_the_runs_agree():
    runs = [[figure("p50", 30.0, "ms"), figure("", 16, "queries")] for _ in range(3)]
    runs[0][0]["value"], runs[2][0]["value"] = 45.25, 28.0
    assert spread(runs) == "p50 28.0 / 30.0 / 45.2 ms, 16 queries"
    assert spread([[figure("", 12_345.6, "deposits/s")]]) == "12,346 deposits/s"


def test_the_summary_says_in_how_many_runs_a_target_was_met():
    runs = [[row("add", 7.0, ok=True)], [row("add", 9.0, ok=False)], [row("add", 8.0, ok=True)]]
    (summary,) = summarize(runs)
    assert summary["value"] == "p50 7.0 / 8.0 / 9.0 ms"
    assert summary["met"] == "2 of 3 runs" and summary["ok"] is False


def test_the_markdown_table_has_a_column_per_store_and_the_floors_beside():
    table = markdown_table([report(100_000, 1_000, [10.0, 12.0, 11.0]), report(1_000_000, 10_000, [20.0])])
    lines = table.splitlines()
    assert lines[0] == "| what | 100k (1,000 owners) | 1M (10,000 owners) |"
    assert (
        "| recall label | p50 10.0 / 11.0 / 12.0 ms (raw SQL 5.0 / 5.5 / 6.0 ms) | p50 20.0 ms (raw SQL 10.0 ms) |"
        in lines
    )
    assert "| pages label | p50 40.0 ms | p50 40.0 ms |" in lines
    assert "| database on disk | 750 MB | 750 MB |" in lines
    assert "| owner measured | bench-00001, 102,191 deposits | bench-00001, 102,191 deposits |" in lines


def test_the_per_query_table_gives_each_size_its_median_beside_the_floor():
    table = per_query_table([report(100_000, 1_000, [10.0, 12.0, 11.0]), report(5_000_000, 50_000, [30.0])])
    assert table.splitlines()[-1] == "| `model` | 700, 11.0 (9.0) | 700, 30.0 (9.0) |"
    assert [store_name(n) for n in (100_003, 1_000_000, 5_000_000, 250)] == ["100k", "1M", "5M", "250"]
