"""Offset paging shared by every list: the bounds and the page a selector returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# The largest offset any page accepts: beyond it both databases overflow their integers.
MAX_OFFSET = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Page[T]:
    """One slice of an ordered list and the size of the whole list."""

    items: Sequence[T]
    total: int
    limit: int
    offset: int

    @property
    def has_next(self) -> bool:
        return self.offset + len(self.items) < self.total

    @property
    def has_previous(self) -> bool:
        return self.offset > 0

    @property
    def next_offset(self) -> int:
        return self.offset + self.limit

    @property
    def previous_offset(self) -> int:
        return max(0, self.offset - self.limit)
