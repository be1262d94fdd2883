"""Logging filters the settings name."""

from __future__ import annotations

import logging


class OneLine(logging.Filter):
    """Logs a record as its one-line message, without the traceback it was given."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True
