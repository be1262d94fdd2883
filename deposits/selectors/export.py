"""One owner's memory as an `atlaso-export` v1 stream (portability.md), read in constant memory.

The lines come in the order an importer can write each as it reads it: the header, every
deposit (bag by bag, each bag's by polarity, oldest first), every edge (both ends given above
it), every retraction, every observation in arrival order (its deposit given above it), every
outcome. Each table is read through a
server-side cursor on PostgreSQL (a chunk of rows at a time), all of them in one read-only
transaction, so the stream is one moment of the store whatever writes meanwhile.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import batched
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

import atlaso_site
from atlaso_site.lib.idempotency import WINDOW
from atlaso_site.lib.timefmt import isoformat
from beliefs import portability as belief_lines
from deposits.models import Contradiction, Deposit, IdempotencyEntry, Resolution

FORMAT = "atlaso_export"
VERSION = 1
# Rows read at a time; lines are sent in pieces of about PIECE bytes.
CHUNK = 2000
PIECE = 64 * 1024

_DEPOSIT_COLUMNS = (
    "id", "content", "polarity", "evidence_grade", "scope_model", "scope_dataset", "scope_env",
    "scope_version", "scope_n", "scope_seed", "scope_note", "user_id", "tags", "artifact_refs",
    "created_at", "author", "author_role", "repro_status", "task_id", "channel", "belief_key",
    "belief_value",
)  # fmt: skip
# One encoder for every line: json.dumps with options builds one per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class ExportCounts:
    deposits: int
    edges: int
    retractions: int
    observations: int
    outcomes: int


def _deposits(user_id: str, include_retracted: bool) -> Any:
    rows = Deposit.objects.filter(user_id=user_id)
    return rows if include_retracted else rows.filter(retracted_at__isnull=True)


def _edges(user_id: str, include_retracted: bool) -> Any:
    edges = Contradiction.objects.filter(user_id=user_id)
    if not include_retracted:
        edges = edges.filter(new_deposit__retracted_at__isnull=True, old_deposit__retracted_at__isnull=True)
    return edges


def export_counts(user_id: str, *, include_retracted: bool = True) -> ExportCounts:
    """How many lines of each kind the owner's export holds."""
    return ExportCounts(
        deposits=_deposits(user_id, include_retracted).count(),
        edges=_edges(user_id, include_retracted).count(),
        retractions=Deposit.objects.filter(user_id=user_id, retracted_at__isnull=False).count()
        if include_retracted
        else 0,
        observations=belief_lines.observation_count(user_id, include_withdrawn=include_retracted),
        outcomes=belief_lines.outcome_count(user_id),
    )


def _deposit_lines(user_id: str, include_retracted: bool, now: datetime) -> Iterator[dict[str, Any]]:
    # Bag by bag, as the owner's bag index holds them (so no sort of the owner's deposits):
    # an importer then writes each bag's row once for all of its deposits, not once per
    # batch that holds one of them.
    rows = (
        _deposits(user_id, include_retracted)
        .order_by("bag_id", "polarity", "created_at", "id")
        .values_list(*_DEPOSIT_COLUMNS)
        .iterator(chunk_size=CHUNK)
    )
    for chunk in batched(rows, CHUNK):
        ids = [row[0] for row in chunk]
        contradicts: dict[Any, list[str]] = {}
        for new, old in (
            _edges(user_id, include_retracted)
            .filter(new_deposit_id__in=ids)
            .order_by("created_at", "id")
            .values_list("new_deposit_id", "old_deposit_id")
        ):
            contradicts.setdefault(new, []).append(str(old))
        keys = {
            deposit: (key, payload_hash)
            for deposit, key, payload_hash in IdempotencyEntry.objects.filter(
                user_id=user_id, deposit_id__in=ids, created_at__gt=now - WINDOW
            ).values_list("deposit_id", "key", "payload_hash")
        }
        for row in chunk:
            (deposit_id, content, polarity, grade, model, dataset, env, version, n, seed, note, owner, tags,
             artifacts, created_at, author, role, repro, task, channel, belief_key, belief_value) = row  # fmt: skip
            line = {
                "kind": "deposit", "id": str(deposit_id), "content": content, "polarity": polarity,
                "evidence_grade": grade,
                "scope": {"model": model, "dataset": dataset, "env": env, "version": version, "n": n,
                          "seed": seed, "note": note},
                "user_id": owner, "tags": tags, "contradicts": contradicts.get(deposit_id, []),
                "artifact_refs": artifacts, "created_at": isoformat(created_at), "author": author,
                "author_role": role, "repro_status": repro, "task_id": task, "channel": channel,
                "belief": {"key": belief_key, "value": belief_value} if belief_key and belief_value else None,
            }  # fmt: skip
            if deposit_id in keys:
                line["idempotency_key"], line["idempotency_payload_hash"] = keys[deposit_id]
            yield line


def _edge_lines(user_id: str, include_retracted: bool) -> Iterator[dict[str, Any]]:
    rows = (
        _edges(user_id, include_retracted)
        .order_by("created_at", "id")
        .values_list("new_deposit_id", "old_deposit_id", "reason", "created_at")
        .iterator(chunk_size=CHUNK)
    )
    for new, old, reason, created_at in rows:
        yield {
            "kind": "edge",
            "from": str(new),
            "to": str(old),
            "reason": reason,
            "created_at": isoformat(created_at),
        }


def _retraction_lines(user_id: str) -> Iterator[dict[str, Any]]:
    rows = (
        Deposit.objects.filter(user_id=user_id, retracted_at__isnull=False)
        .order_by("retracted_at", "id")
        .values_list("id", "retracted_reason", "retracted_at")
        .iterator(chunk_size=CHUNK)
    )
    for chunk in batched(rows, CHUNK):
        # Who undid a resolution is on record; any other retraction names no one.
        undone = dict(
            Resolution.objects.filter(
                deposit_id__in=[row[0] for row in chunk], undone_by__isnull=False
            ).values_list("deposit_id", "undone_by")
        )
        for deposit_id, reason, at in chunk:
            yield {
                "kind": "retraction", "deposit_id": str(deposit_id), "reason": reason or "",
                "retracted_at": isoformat(at), "by": undone.get(deposit_id),
            }  # fmt: skip


def export_lines(user_id: str, *, include_retracted: bool = True) -> Iterator[dict[str, Any]]:
    """The owner's export, line by line (header first), read in one snapshot of the store."""
    # Inside a transaction the caller opened (a test's), the isolation is the caller's.
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if connection.vendor == "postgresql" and outermost:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        now = timezone.now()
        counts = export_counts(user_id, include_retracted=include_retracted)
        yield {
            "kind": FORMAT, "version": VERSION, "user_id": user_id, "exported_at": isoformat(now),
            "server_version": atlaso_site.__version__, "counts": {
                "deposits": counts.deposits, "edges": counts.edges, "retractions": counts.retractions,
                "observations": counts.observations, "outcomes": counts.outcomes,
            },
        }  # fmt: skip
        yield from _deposit_lines(user_id, include_retracted, now)
        yield from _edge_lines(user_id, include_retracted)
        if include_retracted:
            yield from _retraction_lines(user_id)
        yield from belief_lines.observation_lines(user_id, include_withdrawn=include_retracted, now=now)
        yield from belief_lines.outcome_lines(user_id)


def export_bytes(user_id: str, *, include_retracted: bool = True, gzip: bool = False) -> Iterator[bytes]:
    """The export as JSON Lines in pieces of about PIECE bytes, gzip-compressed when asked."""
    pieces = _pieces(export_lines(user_id, include_retracted=include_retracted))
    return _gzipped(pieces) if gzip else pieces


def _pieces(lines: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    encode = _ENCODER.encode
    buffer: list[str] = []
    size = 0
    for line in lines:
        text = encode(line) + "\n"
        buffer.append(text)
        size += len(text)
        if size >= PIECE:
            yield "".join(buffer).encode("utf-8")
            buffer, size = [], 0
    if buffer:
        yield "".join(buffer).encode("utf-8")


def _gzipped(pieces: Iterable[bytes]) -> Iterator[bytes]:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    for piece in pieces:
        out = compressor.compress(piece)
        if out:
            yield out
    yield compressor.flush()
