"""gunicorn's configuration module: the workers' shared metrics folder, a dead worker's figures, JSON logs.

Given as `-c python:atlaso_site.observability.gunicorn_conf` by `atlaso_site.supervisor.commands`;
the log lines are JSON when `LOG_FORMAT=json`.

Read by gunicorn's master, which loads no Django (it would, before gevent patches the
workers): nothing here imports Django.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

from gunicorn.glogging import Logger as GunicornLogger

from atlaso_site.observability.logs import FORMATS, JSON, TEXT, RequestContext, formatter

MULTIPROC_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
_made_here: list[str] = []


def on_starting(server: Any) -> None:
    """Give the workers a metrics folder to share.

    The one named (atlaso_site.supervisor names one, shared with the Celery worker), else a new
    one of this server's own, removed at its exit.
    """
    folder = os.environ.get(MULTIPROC_VARIABLE)
    if folder:
        os.makedirs(folder, exist_ok=True)
        return
    folder = tempfile.mkdtemp(prefix="atlaso-metrics-")
    os.environ[MULTIPROC_VARIABLE] = folder
    _made_here.append(folder)


def on_exit(server: Any) -> None:
    for folder in _made_here:
        shutil.rmtree(folder, ignore_errors=True)


def child_exit(server: Any, worker: Any) -> None:
    """A web worker that ended takes its live gauges with it (its counters stay counted)."""
    if os.environ.get(MULTIPROC_VARIABLE):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


def log_format() -> str:
    chosen = os.environ.get("LOG_FORMAT", TEXT).strip().lower() or TEXT
    return chosen if chosen in FORMATS else TEXT


class Logger(GunicornLogger):
    """gunicorn's logger; with LOG_FORMAT=json its lines are JSON objects like the application's."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        if log_format() != JSON:
            return
        line = formatter(JSON)
        for handler in (*self.error_log.handlers, *self.access_log.handlers):
            handler.setFormatter(line)
            handler.addFilter(RequestContext())


logger_class = "atlaso_site.observability.gunicorn_conf.Logger"
