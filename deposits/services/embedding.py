"""The embedding job: vectors for the deposits in the backlog, in batches, after their writes.

The database puts every written deposit in the backlog (deposits_embeddingpending, a trigger:
deposits/0028) inside its write; nothing is embedded there, so an embedder that is slow, down or
misconfigured never delays or fails an add. After a write commits, the services ask for a run
(`embedding_wanted`: at most one request per process a second, through the task the top app
registers); beat sweeps what any of those missed; `manage.py embed_deposits` backfills by hand.

A run holds the one embedding lock (two runs at once would embed the same batch twice), makes
sure the configured model is calibrated and the backlog holds every deposit lacking a vector of
it (once per model: a model change re-embeds everything), drops the vectors of other models,
and then embeds the backlog oldest first, a batch at a time: the texts are embedded outside any
transaction, then the vectors written and their deposits taken out of the backlog in one short
transaction. An erased deposit leaves the backlog with its row and gets no vector; a retracted
one leaves it without one.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from atlaso_site.job_runs import JobSkipped, Progress, no_progress
from deposits.domain.meaning import (
    CALIBRATION_PASSAGES,
    CALIBRATION_QUERIES,
    Calibration,
    binary_code,
    calibrated,
    quantized,
)
from deposits.embedders import Embedder, EmbedderError, configured, passage_text
from deposits.models import DepositVector, EmbeddingModel, EmbeddingPending, VectorHead
from deposits.search.meaning import ModelInfo
from deposits.selectors.embedding import forget_model_info, model_info

logger = logging.getLogger(__name__)

# The advisory lock one embedding run holds on PostgreSQL (any constant no other lock uses).
EMBEDDING_LOCK = 7_337_037
# Vectors of a model no longer configured are deleted this many at a time.
DROP_BATCH = 10_000
# The services ask for a run at most this often per process; the run embeds until the backlog
# is empty, so the writes in between are embedded by it (or by the next request, or the sweep).
WANT_EVERY_SECONDS = 1.0

Trigger = Callable[[], None]
_trigger: Trigger | None = None
_wanted_at = -WANT_EVERY_SECONDS
_want_lock = threading.Lock()
_sqlite_lock = threading.Lock()
# A model's calibration, computed once per process (the same texts give the same vectors).
_calibrations: dict[str, Calibration] = {}


def set_embed_trigger(trigger: Trigger | None) -> None:
    """Register how a write asks for an embedding run (the top app's Celery task), at start-up."""
    global _trigger
    _trigger = trigger


def embedding_wanted() -> None:
    """After a write commits: ask for an embedding run, at most once a second per process.

    Never raises: a broker that refuses leaves the deposits in the backlog for the sweep.
    """
    global _wanted_at
    if _trigger is None or configured().embedder is None:
        return
    with _want_lock:
        now = time.monotonic()
        if now - _wanted_at < WANT_EVERY_SECONDS:
            return
        _wanted_at = now
    try:
        _trigger()
    except Exception as error:
        logger.warning(
            "could not ask for an embedding run (%s: %s); the sweep will", type(error).__name__, error
        )


def when_committed() -> None:
    """Called inside a write: ask for an embedding run once it commits."""
    transaction.on_commit(embedding_wanted)


@contextmanager
def _the_lock() -> Iterator[bool]:
    """The one embedding lock: True when this run holds it."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [EMBEDDING_LOCK])
            held = bool(cursor.fetchone()[0])
        try:
            yield held
        finally:
            if held:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [EMBEDDING_LOCK])
        return
    # SQLite serves one machine: one run per process, and the database orders the writes.
    held = _sqlite_lock.acquire(blocking=False)
    try:
        yield held
    finally:
        if held:
            _sqlite_lock.release()


def model_calibrate(embedder: Embedder) -> ModelInfo:
    """The embedder's model as calibrated: read, or calibrated now (deposits.domain.meaning)."""
    info = model_info(embedder.name)
    if info is not None:
        return info
    found = _calibrations.get(embedder.name)
    if found is None:
        passages = embedder.passages(list(CALIBRATION_PASSAGES))
        queries = embedder.queries(list(CALIBRATION_QUERIES))
        if passages.shape[1] != queries.shape[1]:
            raise EmbedderError(
                f"the embedder answered {passages.shape[1]} dimensions for passages and "
                f"{queries.shape[1]} for queries"
            )
        found = _calibrations[embedder.name] = calibrated(passages, queries)
    EmbeddingModel.objects.get_or_create(
        name=embedder.name,
        defaults={
            "dims": found.dims,
            "floor": found.floor,
            "centre": found.centre.astype(np.float32).tobytes(),
            "calibrated_at": timezone.now(),
        },
    )
    forget_model_info()
    info = model_info(embedder.name)
    assert info is not None
    return info


def backlog_fill(model: ModelInfo) -> int:
    """Put every deposit lacking a vector of `model` in the backlog, once per model; how many."""
    row = EmbeddingModel.objects.get(name=model.name)
    if row.backlog_filled_at is not None:
        return 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO deposits_embeddingpending (deposit_id, user_id, queued_at) "
            "SELECT d.id, d.user_id, %s FROM deposits_deposit d "
            "WHERE d.retracted_at IS NULL AND NOT EXISTS ("
            "  SELECT 1 FROM deposits_depositvector v WHERE v.deposit_id = d.id AND v.model = %s) "
            "ON CONFLICT DO NOTHING",
            [connection.ops.adapt_datetimefield_value(timezone.now()), model.name],
        )
        added = max(cursor.rowcount, 0)
        EmbeddingModel.objects.filter(name=model.name).update(backlog_filled_at=timezone.now())
    return added


def vectors_of_other_models_drop(model: ModelInfo) -> int:
    """Delete the vectors no longer of the configured model (recall reads only its own)."""
    dropped = 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM deposits_depositvector WHERE id IN ("
                "SELECT id FROM deposits_depositvector WHERE model <> %s LIMIT %s)",
                [model.name, DROP_BATCH],
            )
            count = max(cursor.rowcount, 0)
        dropped += count
        if count < DROP_BATCH:
            VectorHead.objects.exclude(model=model.name).delete()
            return dropped


def _waiting(user_id: str | None) -> int:
    pending = EmbeddingPending.objects.all()
    return (pending.filter(user_id=user_id) if user_id else pending).count()


# A deposit waiting for its vector: (id, owner, content, scope note, retracted_at).
_Row = tuple[uuid.UUID, str, str, str | None, Any]


def _next_batch(size: int, user_id: str | None) -> list[_Row]:
    """The oldest waiting deposits: (id, owner, content, scope note, retracted_at)."""
    owner = " AND p.user_id = %s" if user_id else ""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.deposit_id, d.user_id, d.content, d.scope_note, d.retracted_at "
            "FROM deposits_embeddingpending p JOIN deposits_deposit d ON d.id = p.deposit_id "
            f"WHERE TRUE{owner} ORDER BY p.queued_at, p.deposit_id LIMIT %s",
            [*([user_id] if user_id else []), size],
        )
        return [(uuid.UUID(str(row[0])), *row[1:]) for row in cursor.fetchall()]


def _write_vectors(model: ModelInfo, rows: list[tuple[uuid.UUID, str]], vectors: np.ndarray) -> int:
    """Write the batch's vectors and take its deposits out of the backlog, in one transaction.

    A deposit erased meanwhile gets none.
    """
    ids = [deposit_id for deposit_id, _ in rows]
    now = timezone.now()
    with transaction.atomic():
        if connection.vendor == "postgresql":
            # Held to the commit: an erasure waits for it, then deletes the vector with its deposit.
            with connection.cursor() as cursor:
                cursor.execute("SELECT id FROM deposits_deposit WHERE id = ANY(%s) FOR KEY SHARE", [ids])
                present = {uuid.UUID(str(row[0])) for row in cursor.fetchall()}
        else:
            from deposits.models import Deposit

            present = set(Deposit.objects.filter(pk__in=ids).values_list("pk", flat=True))
        DepositVector.objects.bulk_create(
            [
                DepositVector(
                    deposit_id=deposit_id,
                    user_id=user_id,
                    model=model.name,
                    code=binary_code(vector, model.centre),
                    vector=quantized(vector),
                    created_at=now,
                )
                for (deposit_id, user_id), vector in zip(rows, vectors, strict=True)
                if deposit_id in present
            ],
            ignore_conflicts=True,
        )
        heads_advance(model.name, ids)
        EmbeddingPending.objects.filter(deposit_id__in=ids).delete()
    return len(present)


def heads_advance(model: str, deposit_ids: list[uuid.UUID]) -> None:
    """Move each owner's head to its newest vector of `model` among these deposits'.

    Recall reads the head to know whether the codes it holds are current. One writer at a time: ids
    grow.
    """
    newest = (
        DepositVector.objects.filter(deposit_id__in=deposit_ids, model=model)
        .values("user_id")
        .annotate(last=Max("id"))
    )
    VectorHead.objects.bulk_create(
        [VectorHead(user_id=row["user_id"], model=model, last_id=row["last"]) for row in newest],
        update_conflicts=True,
        unique_fields=["user_id", "model"],
        update_fields=["last_id"],
    )


def _embed_batch(embedder: Embedder, model: ModelInfo, rows: list[_Row], threads: int) -> tuple[int, int]:
    """One batch of the backlog: the vectors of its live deposits written; (embedded, skipped).

    A retracted deposit leaves the backlog without a vector; one erased while its text was being
    embedded is skipped by the write.
    """
    retracted = [row[0] for row in rows if row[4] is not None]
    if retracted:
        EmbeddingPending.objects.filter(deposit_id__in=retracted).delete()
    wanted = [row for row in rows if row[4] is None]
    if not wanted:
        return 0, len(retracted)
    vectors = embedder.passages([passage_text(row[2], row[3]) for row in wanted], threads=threads)
    if vectors.shape != (len(wanted), model.dims):
        raise EmbedderError(
            f"the embedder answered {vectors.shape[-1]} dimensions where {model.name}'s "
            f"vectors have {model.dims}"
        )
    written = _write_vectors(model, [(row[0], row[1]) for row in wanted], vectors)
    return written, len(retracted) + len(wanted) - written


def deposits_embed(
    *,
    progress: Progress | None = None,
    user_id: str | None = None,
    limit: int | None = None,
    threads: int | None = None,
    batch: int | None = None,
) -> dict[str, Any]:
    """Embed the backlog (one owner's, with `user_id`; at most `limit` deposits); its counts.

    Skipped with no embedder, or while another run embeds; an embedder failure fails the run,
    and what it had not written stays in the backlog for the next.
    """
    from django.conf import settings

    progress = progress or no_progress
    found = configured()
    if found.embedder is None:
        raise JobSkipped(found.problem or "ATLASO_EMBEDDER is none: recall is by words alone")
    embedder = found.embedder
    size = batch or settings.ATLASO_EMBEDDINGS_BATCH
    threads = threads or settings.ATLASO_EMBEDDER_THREADS
    with _the_lock() as held:
        if not held:
            raise JobSkipped("another run is embedding")
        model = model_calibrate(embedder)
        queued = backlog_fill(model)
        dropped = vectors_of_other_models_drop(model)
        total = _waiting(user_id)
        if limit is not None:
            total = min(total, limit)
        embedded = skipped = 0
        started = time.perf_counter()
        progress(0, total)
        while embedded + skipped < total:
            rows = _next_batch(min(size, total - embedded - skipped), user_id)
            if not rows:
                break
            done, passed = _embed_batch(embedder, model, rows, threads)
            embedded += done
            skipped += passed
            progress(embedded + skipped, total)
        elapsed = time.perf_counter() - started
    return {
        "model": model.name,
        "embedded": embedded,
        "skipped": skipped,
        "queued": queued,
        "dropped": dropped,
        "waiting": _waiting(user_id),
        "per_second": round(embedded / elapsed, 1) if elapsed > 0 and embedded else 0,
    }
