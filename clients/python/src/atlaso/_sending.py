"""How each client sends: the shared exchange (`_core`) driven over httpx, blocking or awaited.

The two clients differ here and nowhere else. `Sender`, under `Memory`, holds one
`httpx.Client` that its threads share and waits with `time.sleep`; `AsyncSender`, under
`AsyncMemory`, holds an `httpx.AsyncClient` for the event loop it runs in and waits with
`asyncio.sleep`. What the clients offer is written once, in `_client`, and `_async_client` is
generated from it (tools/generate_clients.py), so each method here has its twin, by name.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx

from atlaso._core import Send, Settings, exchange
from atlaso._operations import Operation

T = TypeVar("T")


class Sender:
    """Sends a `Memory`'s requests with one pooled `httpx.Client`, opened on first use."""

    def __init__(self, settings: Settings, transport: httpx.BaseTransport | None) -> None:
        self._settings = settings
        self._transport = transport
        self._http: httpx.Client | None = None
        self._lock = threading.Lock()
        # Seams for tests: how a retry waits, and the jitter's source.
        self._sleep: Callable[[float], object] = time.sleep
        self._random: Callable[[], float] = random.random

    def _client(self) -> httpx.Client:
        with self._lock:
            if self._http is None:
                self._http = httpx.Client(timeout=self._settings.timeout, transport=self._transport)
            return self._http

    def _run(self, operation: Operation[T]) -> T:
        """Drive `operation`'s exchange to its answer: send each request, wait out each pause."""
        steps = exchange(self._settings, operation, rng=self._random)
        reply: Any = None
        while True:
            try:
                step = steps.send(reply)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            if isinstance(step, Send):
                try:
                    reply = self._client().send(step.request, stream=step.stream)
                    if step.stream and not reply.is_success:
                        reply.read()  # an error's envelope, read whole
                except httpx.TransportError as error:
                    reply = error
            else:
                self._sleep(step.seconds)
                reply = None

    def _disconnect(self) -> None:
        with self._lock:
            http, self._http = self._http, None
        if http is not None:
            http.close()


class AsyncSender:
    """Sends an `AsyncMemory`'s requests with an `httpx.AsyncClient` per event loop."""

    def __init__(self, settings: Settings, transport: httpx.AsyncBaseTransport | None) -> None:
        self._settings = settings
        self._transport = transport
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # Seams for tests: how a retry waits, and the jitter's source.
        self._sleep: Callable[[float], Awaitable[object]] = asyncio.sleep
        self._random: Callable[[], float] = random.random

    def _client(self) -> httpx.AsyncClient:
        # An AsyncClient's connections belong to the event loop that opened them: a memory used
        # again under a new loop (a second asyncio.run, a notebook cell) opens a new one. No await
        # between the test and the assignment, so one loop cannot race itself here.
        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop:
            self._http = httpx.AsyncClient(timeout=self._settings.timeout, transport=self._transport)
            self._loop = loop
        return self._http

    async def _run(self, operation: Operation[T]) -> T:
        """Drive `operation`'s exchange to its answer: send each request, wait out each pause."""
        steps = exchange(self._settings, operation, rng=self._random)
        reply: Any = None
        while True:
            try:
                step = steps.send(reply)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            if isinstance(step, Send):
                try:
                    reply = await self._client().send(step.request, stream=step.stream)
                    if step.stream and not reply.is_success:
                        await reply.aread()  # an error's envelope, read whole
                except httpx.TransportError as error:
                    reply = error
            else:
                await self._sleep(step.seconds)
                reply = None

    async def _disconnect(self) -> None:
        http, loop, self._http, self._loop = self._http, self._loop, None, None
        # Connections of a loop that has ended went with it; only this loop's can be closed.
        if http is not None and loop is asyncio.get_running_loop():
            await http.aclose()
