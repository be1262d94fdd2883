# Generated from _client.py by tools/generate_clients.py: do not edit. Edit _client.py (how
# requests are sent: _sending.py), then run `python clients/python/tools/generate_clients.py`.
"""`AsyncMemory` and its `AsyncUserHandle`: the asynchronous client.

The same operations (`_operations`) and the same exchange (`_core`) as `Memory`, driven with
`httpx.AsyncClient` and `asyncio.sleep`; only the sending differs.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

import httpx

from atlaso import _operations as ops
from atlaso._core import Settings, resolve_settings
from atlaso._sending import AsyncSender
from atlaso._transfer import ExportSink, ImportSource, PathOrFile, Progress
from atlaso._types import (
    AddManyResult,
    AddResult,
    ApiKeyInfo,
    Bag,
    BagPage,
    BeliefPage,
    BeliefRevision,
    BeliefVerdict,
    Deposit,
    DepositPage,
    Diagnostics,
    ExportHeader,
    ForgetResult,
    ImportResult,
    PeekView,
    RecallMode,
    RetractResult,
    SearchResults,
)
from atlaso._validation import MUTATORS, check_transport, check_user_id, immutable


class AsyncMemory(AsyncSender):
    """`Memory`, awaitable: `for_user()` is synchronous and gives an `AsyncUserHandle`.

    Takes the same keyword arguments; `transport` is an `httpx.AsyncBaseTransport`. Close it
    with `await m.aclose()` or `async with AsyncMemory() as m:`.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        validate_user_id: Callable[[str], object] | None = None,
        timeout: float = 10.0,
        max_retries: int = 2,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        check_transport(transport, httpx.AsyncBaseTransport)
        settings = resolve_settings(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            validate_user_id=validate_user_id,
        )
        super().__init__(settings, transport)

    @property
    def settings(self) -> Settings:
        """Where this client talks to, and where each setting came from."""
        return self._settings

    async def aclose(self) -> None:
        """Close the pooled connections; the client opens new ones if used again."""
        await self._disconnect()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        if name in MUTATORS:
            immutable(name, "m.")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}", name=name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self._settings.base_url!r})"

    def for_user(self, user_id: str) -> AsyncUserHandle:
        """The handle for one memory owner (an agent's end user, e.g. "alice")."""
        check_user_id(user_id)
        if self._settings.validate_user_id is not None:
            self._settings.validate_user_id(user_id)
        return AsyncUserHandle(user_id, self)

    async def key_info(self) -> ApiKeyInfo:
        """The calling key: name, channel, tier, permissions, prefix (`GET /keys/me`)."""
        return await self._run(ops.key_info())

    async def add(
        self,
        text: str,
        *,
        user_id: str,
        polarity: str = "open",
        evidence_grade: str = "anecdotal",
        scope: ops.ScopeLike | None = None,
        tags: Sequence[str] | None = None,
        artifact_refs: Sequence[str] | None = None,
        contradicts: ops.IdLike | Sequence[ops.IdLike] | None = None,
        author: str | None = None,
        author_role: str | None = None,
        task_id: str | None = None,
        belief: ops.BeliefLike | None = None,
        idempotency_key: str | None = None,
    ) -> AddResult:
        """Write one claim through the gate. Without `idempotency_key` a random one guards retries."""
        return await self.for_user(user_id).add(
            text,
            polarity=polarity,
            evidence_grade=evidence_grade,
            scope=scope,
            tags=tags,
            artifact_refs=artifact_refs,
            contradicts=contradicts,
            author=author,
            author_role=author_role,
            task_id=task_id,
            belief=belief,
            idempotency_key=idempotency_key,
        )

    async def add_many(
        self, items: Sequence[ops.ItemLike], *, user_id: str, on_gate_reject: str = "skip"
    ) -> AddManyResult:
        """Import many claims, each with its own idempotency key; sent 1,000 to a request."""
        return await self.for_user(user_id).add_many(items, on_gate_reject=on_gate_reject)

    async def contradict(
        self,
        new_text: str,
        contradicts: ops.IdLike | Sequence[ops.IdLike],
        *,
        user_id: str,
        reason: str,
        polarity: str = "open",
        evidence_grade: str = "anecdotal",
        scope: ops.ScopeLike | None = None,
        tags: Sequence[str] | None = None,
        artifact_refs: Sequence[str] | None = None,
        author: str | None = None,
        author_role: str | None = None,
        task_id: str | None = None,
        belief: ops.BeliefLike | None = None,
        idempotency_key: str | None = None,
    ) -> AddResult:
        """Write a correction that supersedes `contradicts`; without a scope it joins their bag."""
        return await self.for_user(user_id).contradict(
            new_text,
            contradicts,
            reason=reason,
            polarity=polarity,
            evidence_grade=evidence_grade,
            scope=scope,
            tags=tags,
            artifact_refs=artifact_refs,
            author=author,
            author_role=author_role,
            task_id=task_id,
            belief=belief,
            idempotency_key=idempotency_key,
        )

    async def recall(
        self,
        query: str,
        *,
        user_id: str,
        limit: int = 10,
        scope: ops.ScopeLike | None = None,
        include_superseded: bool = False,
        mode: RecallMode | None = None,
    ) -> SearchResults:
        """Search the owner's memory; flags cover every matching bag, so `limit` cannot hide a conflict.

        `mode`: "words" (full text), "meaning" (embeddings: a claim that says the same in other
        words), "hybrid" (both, fused); None lets the server choose (hybrid where it can).
        """
        return await self.for_user(user_id).recall(
            query, limit=limit, scope=scope, include_superseded=include_superseded, mode=mode
        )

    async def get(self, deposit_id: str, *, user_id: str) -> Deposit:
        """One deposit with its audit state (`superseded_by`, `retracted`)."""
        return await self.for_user(user_id).get(deposit_id)

    async def list_recent(
        self, *, user_id: str, limit: int = 20, offset: int = 0, include_retracted: bool = False
    ) -> DepositPage:
        """A page of the owner's deposits, newest first."""
        return await self.for_user(user_id).list_recent(
            limit=limit, offset=offset, include_retracted=include_retracted
        )

    def iter_deposits(
        self, *, user_id: str, page_size: int = 200, include_retracted: bool = False
    ) -> AsyncIterator[Deposit]:
        """Every deposit, newest first, a page at a time (each once, though writes shift pages)."""
        return self.for_user(user_id).iter_deposits(page_size=page_size, include_retracted=include_retracted)

    async def retract(
        self, deposit_id: str, *, user_id: str, reason: str, hard_delete: bool = False
    ) -> RetractResult:
        """Soft-retract (kept for audit), or erase with `hard_delete=True` (needs the erase permission)."""
        return await self.for_user(user_id).retract(deposit_id, reason=reason, hard_delete=hard_delete)

    async def health(self, *, user_id: str, window_days: int = 30) -> Diagnostics:
        """The Field Maturity Index and its pillars over the last `window_days`."""
        return await self.for_user(user_id).health(window_days=window_days)

    async def peek(self, *, user_id: str, limit: int = 10) -> PeekView:
        """The newest live deposits, their count, the FMI, and whether a recent bag disagrees."""
        return await self.for_user(user_id).peek(limit=limit)

    async def bags(
        self,
        *,
        user_id: str,
        conflict: bool | None = None,
        scope: ops.ScopeLike | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> BagPage:
        """The owner's scope bags with live statistics; `conflict=True` lists the disagreeing ones."""
        return await self.for_user(user_id).bags(conflict=conflict, scope=scope, limit=limit, offset=offset)

    async def bag(self, bag_id: str, *, user_id: str) -> Bag:
        """One bag with its deposits, live and superseded, each marked."""
        return await self.for_user(user_id).bag(bag_id)

    async def belief(self, key: str, *, user_id: str) -> BeliefVerdict:
        """What the memory asserts for a belief key, and how sure it is."""
        return await self.for_user(user_id).belief(key)

    async def beliefs(
        self, *, user_id: str, uncertain: bool | None = None, limit: int = 50, offset: int = 0
    ) -> BeliefPage:
        """The owner's belief verdicts; `uncertain=True` lists those to ask about, not assert."""
        return await self.for_user(user_id).beliefs(uncertain=uncertain, limit=limit, offset=offset)

    async def observe(
        self,
        key: str,
        value: str,
        *,
        user_id: str,
        observed_at: datetime | str | None = None,
        content_confidence: float | None = None,
        taint_tier: str | None = None,
        source_id: str | None = None,
    ) -> BeliefRevision:
        """Record one observation of a belief; its weight comes from this key's channel, not its words."""
        return await self.for_user(user_id).observe(
            key,
            value,
            observed_at=observed_at,
            content_confidence=content_confidence,
            taint_tier=taint_tier,
            source_id=source_id,
        )

    async def export(
        self, path_or_file: PathOrFile, *, user_id: str, include_retracted: bool = True
    ) -> ExportHeader:
        """Write the owner's whole memory (atlaso-export v1) to a file, as it arrives.

        Gzip when the file's name ends in `.gz`. Returns the export's header (counts of each kind).
        """
        return await self.for_user(user_id).export(path_or_file, include_retracted=include_retracted)

    def iter_export(self, *, user_id: str, include_retracted: bool = True) -> AsyncIterator[dict[str, Any]]:
        """The owner's export line by line as dicts, header first; stop anywhere."""
        return self.for_user(user_id).iter_export(include_retracted=include_retracted)

    async def import_(
        self,
        path_or_file: PathOrFile,
        *,
        user_id: str,
        format: str = "atlaso",
        dry_run: bool = False,
        on_gate_reject: str = "skip",
        progress: Progress | None = None,
    ) -> ImportResult:
        """Import an atlaso-export file (plain or gzip), or a mem0 export with `format="mem0"`.

        Sent as it is read. Idempotent as a whole: a run cut short is run again to finish (this
        client does so itself, within `max_retries`). `progress` is called as it goes.
        """
        return await self.for_user(user_id).import_(
            path_or_file, format=format, dry_run=dry_run, on_gate_reject=on_gate_reject, progress=progress
        )

    async def forget(self, *, user_id: str, confirm: str) -> ForgetResult:
        """Forget this owner whole (needs the erase permission): `confirm` is the user_id again."""
        return await self.for_user(user_id).forget(confirm=confirm)


class AsyncUserHandle:
    """One owner's memory, awaitable: `AsyncMemory().for_user("alice")`. Frozen: it cannot be rebound."""

    __slots__ = ("_memory", "user_id")
    user_id: str
    _memory: AsyncMemory

    def __init__(self, user_id: str, memory: AsyncMemory) -> None:
        object.__setattr__(self, "user_id", user_id)
        object.__setattr__(self, "_memory", memory)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(
            f"{type(self).__name__} is frozen: it cannot be rebound; use for_user(...) for another owner",
            name=name,
        )

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen", name=name)

    def __getattr__(self, name: str) -> Any:
        if name in MUTATORS:
            immutable(name, "user.")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}", name=name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(user_id={self.user_id!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AsyncUserHandle):
            return NotImplemented
        return self.user_id == other.user_id and self._memory is other._memory

    def __hash__(self) -> int:
        return hash((self.user_id, id(self._memory)))

    async def add(
        self,
        text: str,
        *,
        polarity: str = "open",
        evidence_grade: str = "anecdotal",
        scope: ops.ScopeLike | None = None,
        tags: Sequence[str] | None = None,
        artifact_refs: Sequence[str] | None = None,
        contradicts: ops.IdLike | Sequence[ops.IdLike] | None = None,
        author: str | None = None,
        author_role: str | None = None,
        task_id: str | None = None,
        belief: ops.BeliefLike | None = None,
        idempotency_key: str | None = None,
    ) -> AddResult:
        """Write one claim through the gate. Without `idempotency_key` a random one guards retries."""
        return await self._memory._run(
            ops.add(
                self.user_id,
                text,
                polarity=polarity,
                evidence_grade=evidence_grade,
                scope=scope,
                tags=tags,
                artifact_refs=artifact_refs,
                contradicts=contradicts,
                author=author,
                author_role=author_role,
                task_id=task_id,
                belief=belief,
                idempotency_key=idempotency_key,
            )
        )

    async def add_many(self, items: Sequence[ops.ItemLike], *, on_gate_reject: str = "skip") -> AddManyResult:
        """Import many claims, each with its own idempotency key; sent 1,000 to a request."""
        rows = ops.bulk_items(items)
        batches = ops.add_many_batches(self.user_id, rows, on_gate_reject=on_gate_reject)
        return ops.add_many_result(rows, [await self._memory._run(batch) for batch in batches])

    async def contradict(
        self,
        new_text: str,
        contradicts: ops.IdLike | Sequence[ops.IdLike],
        *,
        reason: str,
        polarity: str = "open",
        evidence_grade: str = "anecdotal",
        scope: ops.ScopeLike | None = None,
        tags: Sequence[str] | None = None,
        artifact_refs: Sequence[str] | None = None,
        author: str | None = None,
        author_role: str | None = None,
        task_id: str | None = None,
        belief: ops.BeliefLike | None = None,
        idempotency_key: str | None = None,
    ) -> AddResult:
        """Write a correction that supersedes `contradicts`; without a scope it joins their bag."""
        return await self._memory._run(
            ops.contradict(
                self.user_id,
                new_text,
                contradicts,
                reason=reason,
                polarity=polarity,
                evidence_grade=evidence_grade,
                scope=scope,
                tags=tags,
                artifact_refs=artifact_refs,
                author=author,
                author_role=author_role,
                task_id=task_id,
                belief=belief,
                idempotency_key=idempotency_key,
            )
        )

    async def recall(
        self,
        query: str,
        *,
        limit: int = 10,
        scope: ops.ScopeLike | None = None,
        include_superseded: bool = False,
        mode: RecallMode | None = None,
    ) -> SearchResults:
        """Search the owner's memory; flags cover every matching bag, so `limit` cannot hide a conflict.

        `mode`: "words" (full text), "meaning" (embeddings: a claim that says the same in other
        words), "hybrid" (both, fused); None lets the server choose (hybrid where it can).
        """
        return await self._memory._run(
            ops.recall(
                self.user_id,
                query,
                limit=limit,
                scope=scope,
                include_superseded=include_superseded,
                mode=mode,
            )
        )

    async def get(self, deposit_id: str) -> Deposit:
        """One deposit with its audit state (`superseded_by`, `retracted`)."""
        return await self._memory._run(ops.get(self.user_id, deposit_id))

    async def list_recent(
        self, *, limit: int = 20, offset: int = 0, include_retracted: bool = False
    ) -> DepositPage:
        """A page of the owner's deposits, newest first."""
        return await self._memory._run(
            ops.list_recent(self.user_id, limit=limit, offset=offset, include_retracted=include_retracted)
        )

    async def iter_deposits(
        self, *, page_size: int = 200, include_retracted: bool = False
    ) -> AsyncIterator[Deposit]:
        """Every deposit, newest first, a page at a time (each once, though writes shift pages)."""
        seen: set[str] = set()
        offset = 0
        while True:
            page = await self.list_recent(limit=page_size, offset=offset, include_retracted=include_retracted)
            for deposit in page.items:
                if deposit.id not in seen:
                    seen.add(deposit.id)
                    yield deposit
            offset += len(page.items)
            if not page.items or offset >= page.total:
                return

    async def retract(self, deposit_id: str, *, reason: str, hard_delete: bool = False) -> RetractResult:
        """Soft-retract (kept for audit), or erase with `hard_delete=True` (needs the erase permission)."""
        return await self._memory._run(
            ops.retract(self.user_id, deposit_id, reason=reason, hard_delete=hard_delete)
        )

    async def health(self, *, window_days: int = 30) -> Diagnostics:
        """The Field Maturity Index and its pillars over the last `window_days`."""
        return await self._memory._run(ops.health(self.user_id, window_days=window_days))

    async def peek(self, *, limit: int = 10) -> PeekView:
        """The newest live deposits, their count, the FMI, and whether a recent bag disagrees."""
        return await self._memory._run(ops.peek(self.user_id, limit=limit))

    async def bags(
        self,
        *,
        conflict: bool | None = None,
        scope: ops.ScopeLike | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> BagPage:
        """The owner's scope bags with live statistics; `conflict=True` lists the disagreeing ones."""
        return await self._memory._run(
            ops.bags(self.user_id, conflict=conflict, scope=scope, limit=limit, offset=offset)
        )

    async def bag(self, bag_id: str) -> Bag:
        """One bag with its deposits, live and superseded, each marked."""
        return await self._memory._run(ops.bag(self.user_id, bag_id))

    async def belief(self, key: str) -> BeliefVerdict:
        """What the memory asserts for a belief key, and how sure it is."""
        return await self._memory._run(ops.belief(self.user_id, key))

    async def beliefs(self, *, uncertain: bool | None = None, limit: int = 50, offset: int = 0) -> BeliefPage:
        """The owner's belief verdicts; `uncertain=True` lists those to ask about, not assert."""
        return await self._memory._run(
            ops.beliefs(self.user_id, uncertain=uncertain, limit=limit, offset=offset)
        )

    async def observe(
        self,
        key: str,
        value: str,
        *,
        observed_at: datetime | str | None = None,
        content_confidence: float | None = None,
        taint_tier: str | None = None,
        source_id: str | None = None,
    ) -> BeliefRevision:
        """Record one observation of a belief; its weight comes from this key's channel, not its words."""
        return await self._memory._run(
            ops.observe(
                self.user_id,
                key,
                value,
                observed_at=observed_at,
                content_confidence=content_confidence,
                taint_tier=taint_tier,
                source_id=source_id,
            )
        )

    async def export(self, path_or_file: PathOrFile, *, include_retracted: bool = True) -> ExportHeader:
        """Write the owner's whole memory (atlaso-export v1) to a file, as it arrives.

        Gzip when the file's name ends in `.gz`. Returns the export's header (counts of each kind).
        """
        sink = ExportSink(path_or_file)
        response = await self._memory._run(
            ops.export(self.user_id, include_retracted=include_retracted, gzip=sink.gzip)
        )
        try:
            gzipped = response.headers.get("content-encoding", "") == "gzip"
            sink.open(arrives_gzipped=gzipped)
            async for chunk in response.aiter_raw() if gzipped else response.aiter_bytes():
                sink.write(chunk)
            return sink.finish()
        except BaseException:
            sink.abandon()
            raise
        finally:
            await response.aclose()

    async def iter_export(self, *, include_retracted: bool = True) -> AsyncIterator[dict[str, Any]]:
        """The owner's export line by line as dicts, header first; stop anywhere."""
        response = await self._memory._run(
            ops.export(self.user_id, include_retracted=include_retracted, gzip=True)
        )
        try:
            async for line in response.aiter_lines():
                if line:
                    yield json.loads(line)
        finally:
            await response.aclose()

    async def import_(
        self,
        path_or_file: PathOrFile,
        *,
        format: str = "atlaso",
        dry_run: bool = False,
        on_gate_reject: str = "skip",
        progress: Progress | None = None,
    ) -> ImportResult:
        """Import an atlaso-export file (plain or gzip), or a mem0 export with `format="mem0"`.

        Sent as it is read. Idempotent as a whole: a run cut short is run again to finish (this
        client does so itself, within `max_retries`). `progress` is called as it goes.
        """
        source = ImportSource(path_or_file, progress=progress)
        return await self._memory._run(
            ops.import_(
                self.user_id,
                source.achunks,
                length=source.length,
                format=format,
                dry_run=dry_run,
                on_gate_reject=on_gate_reject,
            )
        )

    async def forget(self, *, confirm: str) -> ForgetResult:
        """Forget this owner whole (needs the erase permission): `confirm` is the user_id again."""
        return await self._memory._run(ops.forget(self.user_id, confirm=confirm))
