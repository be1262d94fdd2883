"""Run the belief benchmark (atlaso_site/bench/beliefs.py) and print its table."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from atlaso_site.bench.beliefs import BenchmarkDataError, format_table, run_from_path, write_json


class Command(BaseCommand):
    help = (
        "Compare last-write-wins, the seed's rule and this rule on knowledge-update "
        "supersessions, clean and under attack; prints accuracy and mean asserted probability."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--data",
            help="knowledge-update JSON: the shipped fixture by default, or longmemeval_oracle.json",
        )
        parser.add_argument("--json", dest="json_path", help="also write the results as JSON here")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = run_from_path(options["data"])
        except BenchmarkDataError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(format_table(result))
        if options["json_path"]:
            write_json(result, options["json_path"])
            self.stdout.write(f"wrote {options['json_path']}")
