"""The bench's figures over several runs, and over several store sizes, as text and Markdown.

A row of `bench` carries its measurements as figures (`{"label", "value", "unit"}`), beside the
text it prints for one run; over runs each figure reads `min / median / max` (one number when
the runs agree, as query counts do).
"""

from __future__ import annotations

import statistics
from typing import Any

Figure = dict[str, Any]
Row = dict[str, Any]


def figure(label: str, value: float, unit: str) -> Figure:
    return {"label": label, "value": value, "unit": unit}


def number(value: float, unit: str) -> str:
    """Times to a tenth; counts, rates and sizes whole, with thousands separated."""
    return f"{value:,.1f}" if unit in ("ms", "s") else f"{value:,.0f}"


def spread(runs: list[list[Figure]]) -> str:
    """The same figures from each run, each as `min / median / max` (or one number if all agree)."""
    parts = []
    for position, first in enumerate(runs[0]):
        values = [run[position]["value"] for run in runs]
        low, middle, high = (
            number(v, first["unit"]) for v in (min(values), statistics.median(values), max(values))
        )
        text = low if low == high else f"{low} / {middle} / {high}"
        parts.append(" ".join(part for part in (first["label"], text, first["unit"]) if part))
    return ", ".join(parts)


def summarize(runs: list[list[Row]]) -> list[Row]:
    """One row per measurement over all runs: its figures as spreads, met if met in every run."""
    summary = []
    for position, first in enumerate(runs[0]):
        same = [run[position] for run in runs]
        row = dict(first)
        if first.get("figures"):
            row["value"] = spread([r["figures"] for r in same])
        if first.get("floor_figures"):
            row["floor"] = spread([r["floor_figures"] for r in same])
        met = sum(bool(r["ok"]) for r in same)
        row["ok"] = met == len(same)
        row["met"] = "yes" if met == len(same) else "NO" if met == 0 else f"{met} of {len(same)} runs"
        summary.append(row)
    return summary


def store_name(deposits: int) -> str:
    """100,000 → 100k, 1,000,000 → 1M, 5,000,000 → 5M."""
    if deposits >= 1_000_000:
        return f"{round(deposits / 1_000_000, 1):g}M"
    if deposits >= 1_000:
        return f"{round(deposits / 1_000, 1):g}k"
    return str(deposits)


def megabytes(size: int | None) -> str:
    return "" if size is None else f"{size / 2**20:,.0f} MB"


def _cell(rows: list[Row]) -> str:
    if not rows[0].get("figures"):
        return str(rows[0]["value"])  # e.g. a page skipped as not there yet
    text = spread([r["figures"] for r in rows])
    if rows[0].get("floor_figures"):
        text += f" ({spread([r['floor_figures'] for r in rows])})"
    return text


def _measurements(reports: list[dict[str, Any]]) -> dict[str, str]:
    """Every measurement's key and label, in the order the reports' first runs give them."""
    labels: dict[str, str] = {}
    for report in reports:
        for row in report["runs"][0]["rows"]:
            labels.setdefault(row["key"], row["label"])
    return labels


def _measured(report: dict[str, Any], key: str) -> str:
    """One measurement's cell over a report's runs (empty where it was not taken)."""
    rows = [row for run in report["runs"] for row in run["rows"] if row["key"] == key]
    return _cell(rows) if rows else ""


def markdown_table(reports: list[dict[str, Any]]) -> str:
    """One column per report (store size), one row per measurement, each cell min / median / max."""
    header = ["what"] + [f"{store_name(r['store_deposits'])} ({r['store_owners']:,} owners)" for r in reports]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]

    def add(label: str, cells: list[str]) -> None:
        lines.append("| " + " | ".join([label, *cells]) + " |")

    add("owner measured", [f"{r['owner']['user_id']}, {r['owner']['deposits']:,} deposits" for r in reports])
    add("runs", [str(len(r["runs"])) for r in reports])
    add(
        "load average (1 min) as each run began",
        [", ".join(f"{run['load_average']:.2f}" for run in r["runs"]) for r in reports],
    )
    for key, label in _measurements(reports).items():
        add(label, [_measured(report, key) for report in reports])
    add("database on disk", [megabytes(r.get("database_bytes")) for r in reports])
    return "\n".join(lines)


def per_query_table(reports: list[dict[str, Any]]) -> str:
    """Recall per query at each size: the median over the runs of each run's median, beside the floor's."""
    measured = [r for r in reports if r["runs"][0].get("recall_per_query")]
    if not measured:
        return ""
    header = ["query"] + [f"{store_name(r['store_deposits'])}: bags, recall ms (floor ms)" for r in measured]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for position, first in enumerate(measured[0]["runs"][0]["recall_per_query"]):
        cells = []
        for report in measured:
            rows = [run["recall_per_query"][position] for run in report["runs"]]
            recall = statistics.median(r["recall_ms"] for r in rows)
            floor = statistics.median(r["floor_ms"] for r in rows)
            cells.append(f"{rows[0]['matching_bags']:,}, {recall:.1f} ({floor:.1f})")
        lines.append("| " + " | ".join([f"`{first['query']}`", *cells]) + " |")
    return "\n".join(lines)
