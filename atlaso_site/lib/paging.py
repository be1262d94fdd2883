"""Offset paging shared by every list: the bounds, the page a selector returns, and how to cut one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

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


def page_of[T](
    rows: Any,
    *,
    limit: int,
    offset: int,
    convert: Callable[[list[Any]], Sequence[T]] = list,
    counted: Callable[[], int] | None = None,
) -> Page[T]:
    """One page of `rows` (an ordered queryset, or any sequence) with the size of the whole.

    The slice is read first: a first page that is not full is the whole list, so it is not
    counted again. `convert` turns the page's rows into its items (records, verdicts…);
    `counted`, when given, says the size of the whole without counting the rows.
    """
    rows_here = list(rows[offset : offset + limit])
    if offset == 0 and len(rows_here) < limit:
        total = len(rows_here)
    elif counted is not None:
        total = counted()
    else:
        total = (
            rows.count()
            if callable(getattr(rows, "count", None)) and not isinstance(rows, Sequence)
            else len(rows)
        )
    return Page(items=convert(rows_here), total=total, limit=limit, offset=offset)
