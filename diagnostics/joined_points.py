"""Trend points joined into the wire's JSON array, kept in this process while their rows stand.

A trend read of 90 days joins 8,640 stored points (2.1 MB of text): in turn on PostgreSQL, an
owner's first read 76 ms and a read of the same window again 18 ms; the deployment's 60 and 15.
A snapshot never changes once written and ids only grow, so the rows of a window are named
exactly by their count and their first and last id, and a key of those needs no expiry across
processes. Within one, the snapshot rows' write paths (`diagnostics.models.Snapshot`) empty it:
a key must
never name other rows than those it was joined from (SQLite gives a new row the largest id plus
one, so a rolled-back row's id comes back); forgetting an owner empties it too, so the owner's
text does not outlive its rows here.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

# 90 days of one trend are about 2.5 MB: a few dozen trends per process.
MAX_BYTES = 64 * 1024 * 1024


class JoinedPoints:
    """Joined trend points by a window's key, least recently read dropped past `max_bytes`."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[object, ...], str] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[object, ...]) -> str | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: tuple[object, ...], joined: str) -> None:
        if len(joined) > self.max_bytes:
            return
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = joined
            self._bytes += len(joined)
            while self._bytes > self.max_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= len(dropped)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


joined_points = JoinedPoints(MAX_BYTES)


def forget_joined_points() -> None:
    """Empty this process's joined points: snapshot rows were written or deleted here."""
    joined_points.clear()
