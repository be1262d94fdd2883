"""The progress bar `atlaso import` shows on a terminal: lines, deposits/s and time left.

Drawn by rich (the `cli` extra: pip install "atlaso[cli]"), on stderr, so stdout keeps the result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from atlaso._transfer import ImportProgress

Report = Callable[[ImportProgress], object]


@contextmanager
def import_bar(err: TextIO, *, description: str) -> Iterator[Report | None]:
    """A bar that `ImportProgress` reports move; None (and a hint on `err`) without rich."""
    try:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn
    except ModuleNotFoundError:
        err.write('atlaso: for a progress bar, install the cli extra (pip install "atlaso[cli]")\n')
        yield None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[lines]:,} lines · {task.fields[rate]:,.0f} deposits/s"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(file=err), transient=False) as bar:
        task = bar.add_task(description, total=None, lines=0, rate=0.0)

        def report(state: ImportProgress) -> None:
            by_lines = state.total_lines is not None
            bar.update(
                task,
                total=state.total_lines if by_lines else state.total_bytes,
                completed=state.lines if by_lines else state.bytes,
                lines=state.lines,
                rate=state.deposits_per_second,
            )

        yield report
