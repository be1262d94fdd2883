"""`bench_table`: the JSON of several `bench --runs N` as one Markdown table, a column per store size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from atlaso_site.bench.table import markdown_table, per_query_table


class Command(BaseCommand):
    help = (
        "Print the bench results of several stores (JSON files of `bench`) as Markdown, smallest store first."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)

    def handle(self, *args: Any, **options: Any) -> None:
        reports = []
        for file in options["files"]:
            report = json.loads(file.read_text())
            if "runs" not in report:
                raise CommandError(f"{file} has no runs: it was written before `bench --runs`")
            reports.append(report)
        reports.sort(key=lambda report: report["store_deposits"])
        self.stdout.write(markdown_table(reports))
        queries = per_query_table(reports)
        if queries:
            self.stdout.write(
                "\nRecall per query: matching bags, recall ms (floor ms), medians over the runs\n"
            )
            self.stdout.write(queries)
