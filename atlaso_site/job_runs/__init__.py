"""Job runs: every run of every job, recorded one way (a tiny kernel app that imports no app).

The kernel keeps the record and the rules of a run's life (queued → running → succeeded,
failed or skipped; `lost` and `stalled` when a run stops moving, and the sweep that sends such
a run again: the row, not the broker, is the truth); the top app runs the jobs
and registers how a recorded run reaches a worker (`services.set_dispatcher`), so the apps
below it can record a run without knowing Celery or each other. Models live in `models`,
writes in `services`, reads in `selectors`: this module stays importable before Django is set up.
"""

from __future__ import annotations

from collections.abc import Callable

# A job's progress callback: `progress(done, total)`, called as often as the job likes.
Progress = Callable[[int, int], None]


def no_progress(done: int, total: int) -> None:
    """The progress callback of a job nobody watches."""


class JobSkipped(Exception):
    """Raised by a job that did not do its work on purpose (another run holds its lock).

    The run ends `skipped` with the message as its reason; its command exits 0 saying so.
    """
