"""Work of several API calls, written once and run by either client.

A plan is a generator that yields lists of operations (`_operations`) and is sent back their
results, in order, until it returns its answer. `drive` runs one with `Memory`, one call after
another; `adrive` with `AsyncMemory`, each list's calls at once. The integrations (LangGraph's
store, LangChain's tools) and the MCP server write their multi-call work as plans, so the sync
and async forms of each are one piece of code, as `_core.exchange` is for a single request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from atlaso._operations import Operation

if TYPE_CHECKING:
    from atlaso._async_client import AsyncMemory
    from atlaso._client import Memory

T = TypeVar("T")

Calls = Sequence[Operation[Any]]
Plan = Generator[Calls, list[Any], T]


def drive(memory: Memory, plan: Plan[T]) -> T:
    """Run `plan` with the synchronous client; an AtlasoError of any call ends it."""
    replies: list[Any] | None = None
    while True:
        try:
            calls = plan.send(replies) if replies is not None else next(plan)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        replies = [memory._run(call) for call in calls]


async def adrive(memory: AsyncMemory, plan: Plan[T]) -> T:
    """Run `plan` with the asynchronous client, the calls of each step concurrently."""
    replies: list[Any] | None = None
    while True:
        try:
            calls = plan.send(replies) if replies is not None else next(plan)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        replies = list(await asyncio.gather(*(memory._run(call) for call in calls)))
