"""Every log line of the web process and the worker, in one of two formats, with its request id.

`LOG_FORMAT=text` (the default) stays readable by a person:

    [2026-12-05 10:31:02,114 +0000] INFO atlaso.access: GET /api/v1/tiers 200 3.1 ms [request_id=6f1c…]

`LOG_FORMAT=json` gives one JSON object a line for a log pipeline (python-json-logger): `time`,
`level`, `logger`, `message`, `request_id`, and on a request's line `method`, `route`, `status`,
`duration_ms`, `key` (the API key's name) and `login` (the dashboard user).

This module imports no Django: gunicorn's master uses it before any app is loaded.
"""

from __future__ import annotations

import logging
from typing import Any

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

from atlaso_site.observability.context import current_request_id

TEXT = "text"
JSON = "json"
FORMATS = (TEXT, JSON)
TEXT_FORMAT = "[%(asctime)s] %(levelname)s %(name)s: %(message)s"
JSON_FIELDS = "%(levelname)s %(name)s %(message)s"
# Not written to a JSON line: what the record holds besides its fields (Django's request object
# and status code, said as `status` and the request's own fields).
NOT_FIELDS = (*RESERVED_ATTRS, "request", "status_code")


class RequestContext(logging.Filter):
    """Gives every record its request id, and a record about a request that request's fields.

    The request id of the work it was logged in (None outside any). A record Django logs about a
    request (its refusals, its 4xx and 5xx) gets method, path, route, status, duration, key and
    login (`Observed.fields`, duck-typed here).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = current_request_id()
        observed = getattr(getattr(record, "request", None), "observed", None)
        if observed is not None and getattr(record, "route", None) is None:
            for name, value in observed.fields(getattr(record, "status_code", None)).items():
                setattr(record, name, value)
        return True


class TextFormatter(logging.Formatter):
    """A line for a person: time, level, logger, message, and the request id when there is one."""

    default_msec_format = "%s,%03d"

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT, datefmt="%Y-%m-%d %H:%M:%S %z")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        # "10:31:02,114 +0000": the milliseconds before the offset, not after it.
        stamp = super().formatTime(record, "%Y-%m-%d %H:%M:%S")
        offset = super().formatTime(record, "%z")
        return f"{stamp},{int(record.msecs):03d} {offset}"

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        request_id = getattr(record, "request_id", None)
        return f"{line} [request_id={request_id}]" if request_id else line


def json_formatter() -> logging.Formatter:
    """One JSON object a line, with the record's extra fields (the request's) beside the standard ones."""
    return JsonFormatter(
        JSON_FIELDS,
        rename_fields={"levelname": "level", "name": "logger"},
        timestamp="time",
        reserved_attrs=NOT_FIELDS,
        json_ensure_ascii=False,
    )


def formatter(log_format: str) -> logging.Formatter:
    return json_formatter() if log_format == JSON else TextFormatter()


def logging_config(*, log_format: str, level: str) -> dict[str, Any]:
    """Django's LOGGING (and the Celery worker's and beat's, which use the same) for a format."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "one_line": {"()": "atlaso_site.lib.logs.OneLine"},
            "request_context": {"()": "atlaso_site.observability.logs.RequestContext"},
        },
        "formatters": {"line": {"()": "atlaso_site.observability.logs.formatter", "log_format": log_format}},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "filters": ["request_context"],
                "formatter": "line",
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # A request for a host this server does not serve (a scanner, a misrouted proxy) is
            # the client's mistake, answered 400: one line says so, without the traceback
            # Django adds.
            "django.security.DisallowedHost": {"filters": ["one_line"], "level": "WARNING"},
        },
    }
