"""Importing an owner's memory whole: an `atlaso-export` v1 stream, or a mem0 export (portability.md).

The body is read as it arrives, a batch of lines at a time; each batch is written in one
transaction and set-wise (a COPY of its deposits, one upsert of its bags' counts and lexemes,
one recount of the bags its edges and retractions change), so an interrupted import leaves
whole batches, and running it again finds them and writes the rest. Every line goes through
the rules a write does (validation, the gate); a line that breaks one is a failed line and the
others go on. Ids are kept where free (else the deposit gets a new one, remembered in
`ImportedRow`), `created_at` always; nothing is ever overwritten: a line whose row is there
already is a duplicate.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.utils import timezone

from atlaso_site.lib.errors import (
    GATE_REJECTED,
    MISSING_CONTRADICTS,
    NOT_FOUND,
    AtlasoError,
    invalid,
)
from atlaso_site.lib.idempotency import WINDOW, validate_idempotency_key
from atlaso_site.lib.text import first_unstorable
from beliefs import portability as beliefs_import
from beliefs.domain.values import (
    BeliefInputError,
    clean_belief_key,
    clean_content_confidence,
    clean_value,
    is_ceiling,
)
from deposits.domain import gate
from deposits.domain import portability as fmt
from deposits.domain.bags import bag_id as compute_bag_id
from deposits.domain.validation import DepositDraft, validate_deposit, validate_enum, validate_user_id
from deposits.models import ConflictEpisode, Contradiction, Deposit, ImportedRow
from deposits.services import embedding
from deposits.services.bag_counts import (
    NewDeposits,
    bag_terms_refresh,
    bags_add_deposits,
    bags_recount,
    search_text,
)
from deposits.services.deposits import DEPOSIT_COLUMNS, IDEMPOTENCY_COLUMNS
from deposits.services.episodes import Closer, episodes_sync
from deposits.services.owners import Tally, tally_write
from deposits.services.tombstones import forgotten_keys
from deposits.sql import import_batch
from deposits.sql.bulk import insert_rows

FORMATS = ("atlaso", "mem0")
IMPORTED_ROW_COLUMNS = (("user_id", "text"), ("kind", "text"), ("source", "text"), ("target", "text"))
# A batch: this many lines, or this many bytes of them, whichever comes first.
BATCH_LINES = 5000
BATCH_BYTES = 4 * 1024 * 1024
# The failed lines an answer lists (it counts them all).
MAX_FAILED_LINES = 100
# A mem0 export is one JSON document, read whole: at most this many bytes of it.
MEM0_MAX_BYTES = 64 * 1024 * 1024
MAX_RETRACT_REASON = 8000
MAX_EDGE_REASON = 2000
MAX_CHANNEL = 64
# A batch that met a concurrent writer of the same rows (the other import of the same file, a
# deadlock with a write) is run again: it then finds those rows as duplicates.
ATTEMPTS = 3
# Batches of deposits alone written at once, each by a writer on a connection of its own beside
# the import's: see BENCHMARKS.md, "Moving a memory".
WRITERS = 3
DEADLOCK, SERIALIZATION = "40P01", "40001"


@dataclass
class KindCounts:
    committed: int = 0
    duplicates: int = 0
    failed: int = 0

    def add(self, other: KindCounts) -> None:
        self.committed += other.committed
        self.duplicates += other.duplicates
        self.failed += other.failed


@dataclass(frozen=True, slots=True)
class FailedLine:
    line: int
    error: AtlasoError


@dataclass
class ImportResult:
    """What an import did, line kind by line kind; `failed_lines` lists the first 100 failures."""

    deposits: KindCounts = field(default_factory=KindCounts)
    edges: KindCounts = field(default_factory=KindCounts)
    retractions: KindCounts = field(default_factory=KindCounts)
    observations: KindCounts = field(default_factory=KindCounts)
    outcomes: KindCounts = field(default_factory=KindCounts)
    failed_lines: list[FailedLine] = field(default_factory=list)
    lines: int = 0
    dry_run: bool = False
    # The import stopped before the end of its body (a line the gate refused under `abort`, or a
    # body that could not be read on): the lines after it were not written.
    stopped: bool = False
    # Failed lines of no known kind (unreadable, or of another kind).
    unkinded: int = 0

    def kinds(self) -> dict[str, KindCounts]:
        return {
            "deposit": self.deposits,
            "edge": self.edges,
            "retraction": self.retractions,
            "observation": self.observations,
            "outcome": self.outcomes,
        }

    @property
    def written(self) -> int:
        return sum(k.committed + k.duplicates for k in self.kinds().values())

    @property
    def failed(self) -> int:
        return sum(k.failed for k in self.kinds().values()) + self.unkinded

    @property
    def is_partial(self) -> bool:
        """Some lines were written (or found written) and some were not."""
        return (bool(self.failed) or self.stopped) and self.written > 0

    def fail(self, line: int, error: AtlasoError, kind: str | None) -> None:
        if kind in self.kinds():
            self.kinds()[kind].failed += 1
        else:
            self.unkinded += 1
        if len(self.failed_lines) < MAX_FAILED_LINES:
            self.failed_lines.append(FailedLine(line, error))


@dataclass
class _Batch:
    """One batch's outcome, applied to the result only once its transaction has committed."""

    counts: dict[str, KindCounts] = field(default_factory=dict)
    failed: list[tuple[int, AtlasoError, str | None]] = field(default_factory=list)

    def count(self, kind: str) -> KindCounts:
        return self.counts.setdefault(kind, KindCounts())

    def fail(self, line: int, error: AtlasoError, kind: str | None) -> None:
        self.failed.append((line, error, kind))


@dataclass(frozen=True, slots=True)
class Importer:
    """Who imports, and how: the owner the memory moves to, the channel its lines are recorded on.

    The channel is the importing key's, unless `keep_provenance`: then each line's own, as exported.
    """

    user_id: str
    channel: str | None
    tier: str | None
    ceiling: float | None
    keep_provenance: bool
    on_gate_reject: str
    # Whether a deposit of the body was found written already (see _write_deposits).
    seen: _Seen = field(default_factory=lambda: _Seen())
    # The deposits' key to their bag may be checked once per batch (import_batch.copy_deposits).
    bag_keys_setwise: bool = False


@dataclass
class _Seen:
    """An import that has met a deposit id already held: from then on each batch asks first.

    The id held is its own (from an earlier run) or another owner's; from then on each batch asks
    which of its ids are held before writing.
    """

    held: bool = False


def owner_import(
    *,
    user_id: str,
    read: Callable[[int], bytes],
    format: str = "atlaso",
    dry_run: bool = False,
    on_gate_reject: str = "skip",
    channel: str | None = None,
    tier: str | None = None,
    ceiling: float | None = None,
    keep_provenance: bool = False,
    limit: int | None = None,
) -> ImportResult:
    """Import a body (read with `read(n)`) into `user_id`'s memory; see the module.

    Raises a validation_error (nothing written) when the body is not one this format reads from
    its start: no header, a header of another version, not the gzip it announces, not mem0's
    JSON. `dry_run` runs every batch and rolls it all back, so it reports what would happen.
    """
    validate_user_id(user_id)
    if format not in FORMATS:
        raise invalid("format", f"format must be one of: {', '.join(FORMATS)}", allowed=list(FORMATS))
    on_gate_reject = validate_enum("on_gate_reject", on_gate_reject, default="skip")
    importer = Importer(
        user_id, channel, tier, ceiling, keep_provenance, on_gate_reject,
        bag_keys_setwise=connection.vendor == "postgresql" and import_batch.bag_keys_setwise(),
    )  # fmt: skip
    result = ImportResult(dry_run=dry_run)
    lines = _mem0_lines(read, limit) if format == "mem0" else _atlaso_lines(read, limit)
    if not dry_run:
        try:
            _run(importer, lines, result)
        finally:
            # What the committed batches wrote waits in the embedding backlog, as a write's does.
            if result.written:
                embedding.embedding_wanted()
        return result
    with transaction.atomic():
        _run(importer, lines, result)
        transaction.set_rollback(True)
    return result


def _atlaso_lines(read: Callable[[int], bytes], limit: int | None) -> Iterator[fmt.Line]:
    """The body's lines after its header, which must be an atlaso-export v1 header."""
    lines = fmt.read_lines(read, limit=limit)
    try:
        first = next(lines, None)
    except fmt.BrokenInput as error:
        raise invalid("body", str(error)) from None
    if first is None:
        raise invalid("body", "the body is empty; an atlaso-export file starts with its header line")
    problem = fmt.parse_header(first.data, first.error)
    if problem is not None:
        field_name = "version" if first.data and first.data.get("kind") == fmt.FORMAT else "body"
        if first.data is None:
            # Not a line of any export: most often a mem0 export sent without its format.
            problem += ". A mem0 export (one JSON document of memories) is imported with format=mem0"
        raise invalid(field_name, problem)
    return lines


def _mem0_lines(read: Callable[[int], bytes], limit: int | None) -> Iterator[fmt.Line]:
    cap = min(limit or MEM0_MAX_BYTES, MEM0_MAX_BYTES)
    try:
        body = b"".join(fmt.body_chunks(read, cap))
    except fmt.BrokenInput as error:
        raise invalid("body", str(error)) from None
    try:
        memories = fmt.mem0_memories(json.loads(body))
    except (ValueError, RecursionError) as error:
        raise invalid(
            "body", f"a mem0 export is one JSON document, and this body is not JSON ({error})"
        ) from None
    except fmt.LineError as error:
        raise invalid("body", str(error)) from None
    return fmt.mem0_lines(memories, now=timezone.now())


@dataclass
class _Prepared:
    """A batch read, parsed, validated and gated (no database asked): what its transaction writes.

    Also the lines that failed before it (unreadable, of another kind, unstorable, refused).
    """

    by_kind: dict[str, list[fmt.Line]]
    deposits: list[_DepositLine]
    outcome: _Batch
    last_line: int
    # The first line the gate refused under `abort`: nothing from it on is written.
    stop_at: int | None = None
    # The body could not be read on after this batch.
    broken: str | None = None


def _prepared(importer: Importer, lines: Iterator[fmt.Line]) -> Iterator[_Prepared]:
    """The body's lines in batches, each prepared; a body that breaks ends with one marked so."""
    batch: list[fmt.Line] = []
    size = 0
    last = 1
    try:
        for line in lines:
            last = line.number
            batch.append(line)
            size += line.size
            if len(batch) >= BATCH_LINES or size >= BATCH_BYTES:
                yield _prepare(importer, batch, last)
                batch, size = [], 0
    except fmt.BrokenInput as error:
        prepared = _prepare(importer, batch, last)
        prepared.broken = str(error)
        yield prepared
        return
    if batch:
        yield _prepare(importer, batch, last)


def _prepare(importer: Importer, batch: list[fmt.Line], last: int) -> _Prepared:
    outcome = _Batch()
    by_kind = _sorted_by_kind(batch, outcome)
    deposits, stop_at = _check_deposits(importer, by_kind["deposit"], outcome, timezone.now())
    # The drafts hold what is written: the parsed lines need not wait beside them.
    by_kind["deposit"] = []
    if stop_at is not None:
        for kind, lines in by_kind.items():
            by_kind[kind] = [line for line in lines if line.number < stop_at]
        deposits = [d for d in deposits if d.line < stop_at]
    return _Prepared(by_kind, deposits, outcome, last, stop_at)


def _sorted_by_kind(batch: list[fmt.Line], outcome: _Batch) -> dict[str, list[fmt.Line]]:
    """The batch's lines by kind; one unreadable, of another kind or unstorable is a failed line."""
    by_kind: dict[str, list[fmt.Line]] = {kind: [] for kind in fmt.KINDS}
    for line in batch:
        if line.data is None:
            outcome.fail(line.number, invalid("line", line.error or "unreadable line"), line.kind)
            continue
        kind = line.data["kind"]
        if kind not in by_kind:
            outcome.fail(line.number, _other_kind(kind), None)
            continue
        if line.escaped and (found := first_unstorable(line.data)) is not None:
            name, problem = found
            outcome.fail(line.number, invalid(name, f"{name} holds {problem}"), kind)
            continue
        by_kind[kind].append(line)
    return by_kind


def _run(importer: Importer, lines: Iterator[fmt.Line], result: ImportResult) -> None:
    """Each batch written as the next is prepared.

    The body's reading, parsing and validation run one batch ahead (a thread, a greenlet under the
    gevent worker: it only reads the body and computes), and on PostgreSQL batches of deposits alone
    are written several at once (`_Writers`).
    """
    with Ahead(_prepared(importer, lines)) as batches, _Writers(importer, result) as writers:
        for prepared in batches:
            result.lines = prepared.last_line
            last = prepared.stop_at is not None or prepared.broken is not None
            # The batch that ends the import is written by the import itself, after the others.
            if not last and writers.take(prepared):
                continue
            if last or not writers.alone(prepared):
                writers.wait()
            _flush(importer, prepared, result)
            if prepared.stop_at is not None:
                result.stopped = True
                return
            if prepared.broken is not None:
                result.stopped = True
                result.fail(prepared.last_line + 1, invalid("body", prepared.broken), None)
                if not result.written:
                    raise invalid("body", prepared.broken)
                return


class _Writers:
    """Writers beside the import, for the batches that hold deposits alone.

    Each is a thread (a greenlet under gevent) with a connection of its own for the whole import.
    The import hands each such batch to the first writer free, waiting for one when all are busy,
    and never writes one itself: it would stop handing batches over until its own committed, and
    the body's reading ahead with it (each batch is its own transaction, so any may commit first;
    an interrupted import still leaves whole batches). A batch of any other kind waits for them
    (its lines name deposits of the batches before) and is written by the import. Only on
    PostgreSQL, outside a caller's transaction (a dry run, a test), and while each batch handed
    over is written.
    """

    def __init__(self, importer: Importer, result: ImportResult) -> None:
        self.importer = importer
        self.result = result
        self.count = count = WRITERS
        self.enabled = connection.vendor == "postgresql" and not connection.in_atomic_block and count > 0
        self.lock = threading.Lock()
        self.changed = threading.Condition()
        self.todo: queue.SimpleQueue[_Prepared | None] = queue.SimpleQueue()
        self.threads: list[threading.Thread] = []
        self.busy = 0
        self.failed: list[_Prepared] = []

    def alone(self, prepared: _Prepared) -> bool:
        """`prepared` may be written beside other batches: it holds deposits alone."""
        return self.enabled and not any(
            lines for kind, lines in prepared.by_kind.items() if kind != "deposit"
        )

    def take(self, prepared: _Prepared) -> bool:
        """Hand `prepared` to the first writer free (waiting for one) when it may be written beside.

        False when it may not, or a writer has failed (the import writes it then, alone).
        """
        if not self.alone(prepared):
            return False
        with self.changed:
            while self.busy >= self.count and not self.failed:
                self.changed.wait()
            if self.failed:
                return False
            self.busy += 1
        if len(self.threads) < self.busy:
            thread = threading.Thread(target=self._serve, daemon=True)
            self.threads.append(thread)
            thread.start()
        self.todo.put(prepared)
        return True

    def _serve(self) -> None:
        try:
            while (prepared := self.todo.get()) is not None:
                failed = False
                try:
                    _flush(self.importer, prepared, self.result, self.lock)
                except BaseException:  # handed back to the import, which writes the batch itself
                    failed = True
                    connection.close()
                with self.changed:
                    if failed:
                        self.failed.append(prepared)
                    self.busy -= 1
                    self.changed.notify_all()
        finally:
            connection.close()

    def _settled(self) -> list[_Prepared]:
        with self.changed:
            while self.busy:
                self.changed.wait()
            failed, self.failed = self.failed, []
        return failed

    def wait(self) -> None:
        """Every batch handed over, written.

        One a writer could not write (no connection to be had, say) is written by the import
        itself, which then writes alone.
        """
        failed = self._settled()
        if failed:
            self.enabled = False
        for prepared in sorted(failed, key=lambda p: p.last_line):
            _flush(self.importer, prepared, self.result, self.lock)

    def __enter__(self) -> _Writers:
        return self

    def __exit__(self, kind: object, error: object, tb: object) -> None:
        try:
            if kind is None:
                self.wait()
            else:
                self._settled()
        finally:
            for _ in self.threads:
                self.todo.put(None)
            for thread in self.threads:
                thread.join()


def _flush(
    importer: Importer, prepared: _Prepared, result: ImportResult, lock: threading.Lock | None = None
) -> None:
    """Write one batch in its own transaction, then count it.

    A batch that met a concurrent writer of its rows is run again, and then finds them.
    """
    for attempt in range(ATTEMPTS):
        outcome = _Batch(counts={}, failed=list(prepared.outcome.failed))
        try:
            with transaction.atomic():
                _write(importer, prepared, outcome)
        except (IntegrityError, DatabaseError) as error:
            if isinstance(error, IntegrityError):
                importer.seen.held = True
            if attempt + 1 < ATTEMPTS and _is_contention(error):
                continue
            raise
        break
    with lock or contextlib.nullcontext():
        for kind, counts in outcome.counts.items():
            result.kinds()[kind].add(counts)
        for line, error, kind in sorted(outcome.failed, key=lambda f: f[0]):
            result.fail(line, error, kind)


def _is_contention(error: Exception) -> bool:
    if isinstance(error, IntegrityError):
        return True
    return getattr(error.__cause__, "sqlstate", None) in (DEADLOCK, SERIALIZATION)


def _write(importer: Importer, prepared: _Prepared, outcome: _Batch) -> None:
    """The batch's lines, kind by kind (deposits first: every other kind names them)."""
    if connection.vendor == "postgresql":
        # A batch lost in a crash is written again by the next run of the import (it is
        # idempotent as a whole), so its commit need not wait for the disk.
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit = off")
    now = timezone.now()
    tally = Tally(importer.user_id)
    by_kind = prepared.by_kind
    _write_deposits(importer, prepared.deposits, outcome, tally, now)
    _write_edges(importer, by_kind["edge"], outcome, tally, now)
    _write_retractions(importer, by_kind["retraction"], outcome, tally, now)
    _write_observations(importer, by_kind["observation"], outcome, now)
    _write_outcomes(importer, by_kind["outcome"], outcome, now)
    tally_write(tally)


class Ahead:
    """The items of an iterator, made one ahead of their use in a thread of their own.

    Under gevent's patched threading the thread is a greenlet; its error is raised where the item
    would be.
    """

    _END = object()

    def __init__(self, source: Iterator[Any], depth: int = 1) -> None:
        self._queue: queue.Queue[tuple[Any, BaseException | None]] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._fill, args=(source,), daemon=True)

    def _fill(self, source: Iterator[Any]) -> None:
        try:
            for item in source:
                if not self._put((item, None)):
                    return
            self._put((self._END, None))
        except BaseException as error:  # handed to the reader, raised there
            self._put((self._END, error))

    def _put(self, entry: tuple[Any, BaseException | None]) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __enter__(self) -> Iterator[Any]:
        self._thread.start()
        return self._items()

    def _items(self) -> Iterator[Any]:
        while True:
            item, error = self._queue.get()
            if error is not None:
                raise error
            if item is self._END:
                return
            yield item

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _other_kind(kind: str) -> AtlasoError:
    if kind == fmt.FORMAT:
        return invalid("kind", "a second header; an atlaso-export file has one, on its first line")
    return invalid(
        "kind",
        f"{kind[:64]!r} is not a kind of line an atlaso-export v1 file holds; they are: {', '.join(fmt.KINDS)}",
        allowed=list(fmt.KINDS),
    )


# --- Which rows the import wrote before -------------------------------------------------------


def _resolve(
    user_id: str, sources: Iterable[uuid.UUID], *, taken: set[uuid.UUID] | None = None
) -> dict[uuid.UUID, uuid.UUID]:
    """The owner's deposit for each source id the file names.

    That is the deposit filed under another id (ImportedRow), else the owner's deposit of that very
    id. Ids it has neither of are missing; `taken` is told those another owner holds.
    """
    wanted = list(dict.fromkeys(sources))
    if not wanted:
        return {}
    # An owner that never took a deposit under another id (most imports) has nothing to look up.
    moved = ImportedRow.objects.filter(user_id=user_id, kind=ImportedRow.DEPOSIT).exists()
    rows = _resolved_rows(user_id, wanted, moved)
    found: dict[uuid.UUID, uuid.UUID] = {}
    for source, holder, target in rows:
        source = _uuid(source)
        if target is not None:
            found[source] = uuid.UUID(target)
        elif holder == user_id:
            found[source] = source
        elif holder is not None and taken is not None:
            taken.add(source)
    return found


def _resolved_rows(user_id: str, wanted: list[uuid.UUID], moved: bool) -> list[tuple[Any, ...]]:
    """(source, the owner of the deposit of that id, the id it was filed under) for each source.

    Two lookups by the batch's ids, each an index probe per id.
    """
    targets: dict[str, str] = {}
    if moved:
        targets = dict(
            _rows(
                f"SELECT source, target FROM {ImportedRow._meta.db_table} "
                "WHERE user_id = %s AND kind = %s AND source {ids}",
                [user_id, ImportedRow.DEPOSIT],
                [str(s) for s in wanted],
            )
        )
    holders = {
        _uuid(held): owner
        for held, owner in _rows("SELECT id, user_id FROM deposits_deposit WHERE id {ids}", [], wanted)
    }
    return [(s, holders.get(s), targets.get(str(s))) for s in wanted]


def _rows(sql: str, params: list[Any], ids: Sequence[Any]) -> list[tuple[Any, ...]]:
    """A lookup by a batch's ids, `sql` holding `{ids}` where they go.

    One array parameter on PostgreSQL (thousands of placeholders cost more to build and parse than
    the lookup itself), a list on SQLite.
    """
    if connection.vendor == "postgresql":
        return import_batch.rows(sql.format(ids="= ANY(%s)"), [*params, list(ids)])
    marks = ", ".join(["%s"] * len(ids)) or "NULL"
    values = [value.hex if isinstance(value, uuid.UUID) else value for value in ids]
    with connection.cursor() as cursor:
        cursor.execute(sql.format(ids=f"IN ({marks})"), [*params, *values])
        return cursor.fetchall()


def _uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(value)


# --- Deposits ---------------------------------------------------------------------------------


@dataclass
class _DepositLine:
    line: int
    source: uuid.UUID
    draft: DepositDraft
    created_at: datetime
    channel: str | None
    key: str | None
    payload_hash: str
    target: uuid.UUID | None = None


def _check_deposits(
    importer: Importer, lines: Sequence[fmt.Line], outcome: _Batch, now: datetime
) -> tuple[list[_DepositLine], int | None]:
    """Every deposit line validated and gated; the first line the gate refused, under `abort`."""
    checked: list[_DepositLine] = []
    for line in lines:
        data = line.data
        assert data is not None
        try:
            deposit = _deposit_line(importer, line.number, data, now)
        except AtlasoError as error:
            outcome.fail(line.number, error, "deposit")
            continue
        except fmt.LineError as error:
            outcome.fail(line.number, invalid("line", str(error)), "deposit")
            continue
        decision = gate.judge(deposit.draft)
        if not decision.accepted:
            refusal = AtlasoError(
                GATE_REJECTED, f"the gate refused this claim: {decision.reason}", gate_reason=decision.reason
            )
            outcome.fail(line.number, refusal, "deposit")
            if importer.on_gate_reject == "abort":
                return checked, line.number
            continue
        checked.append(deposit)
    return checked, None


def _deposit_line(importer: Importer, number: int, data: Mapping[str, Any], now: datetime) -> _DepositLine:
    source = fmt.parse_id(data.get("id"), "id")
    belief = data.get("belief")
    fields = {
        name: data.get(name)
        for name in ("content", "polarity", "evidence_grade", "scope", "tags", "artifact_refs", "author",
                     "author_role", "task_id", "repro_status")
    }  # fmt: skip
    # The belief's observations arrive as lines of their own: the deposit names its key and value.
    if isinstance(belief, Mapping):
        fields["belief"] = {"key": belief.get("key"), "value": belief.get("value")}
    elif belief is not None:
        fields["belief"] = belief
    draft = validate_deposit(importer.user_id, fields, storable=True)
    created_at = fmt.parse_time(data.get("created_at"), "created_at", now=now)
    channel = importer.channel
    if importer.keep_provenance:
        channel = fmt.optional_text(data, "channel", MAX_CHANNEL)
    key = validate_idempotency_key(data.get("idempotency_key"))
    payload_hash = fmt.optional_text(data, "idempotency_payload_hash", 64) or ""
    return _DepositLine(number, source, draft, created_at, channel, key, payload_hash)


def _write_deposits(
    importer: Importer, deposits: list[_DepositLine], outcome: _Batch, tally: Tally, now: datetime
) -> None:
    counts = outcome.count("deposit")
    if not deposits:
        return
    user_id = importer.user_id
    taken: set[uuid.UUID] = set()
    # Most imports write ids nobody holds (into a fresh database, or a file of new ids): each
    # batch is written without asking, and the first id found held (a primary key refused)
    # rolls its batch back, to be written again asking, as is every batch after it.
    careful = (
        importer.seen.held or ImportedRow.objects.filter(user_id=user_id, kind=ImportedRow.DEPOSIT).exists()
    )
    mine = _resolve(user_id, (d.source for d in deposits), taken=taken) if careful else {}
    fresh, moved = _fresh_deposits(user_id, deposits, mine, taken, counts)
    if not fresh:
        return
    by_bag, rows = _deposit_rows(user_id, fresh)
    # Bag rows first (the deposits' foreign key points at them), as every write orders them.
    in_conflict = bags_add_deposits(user_id=user_id, bags=by_bag, now=now)
    if importer.bag_keys_setwise:
        import_batch.copy_deposits(DEPOSIT_COLUMNS, rows, list(by_bag))
    else:
        insert_rows("deposits_deposit", DEPOSIT_COLUMNS, rows)
    if moved:
        insert_rows(ImportedRow._meta.db_table, IMPORTED_ROW_COLUMNS, moved)
    _claim_keys(user_id, fresh, now)
    opened = episodes_sync(user_id=user_id, bag_ids=set(by_bag), now=now, in_conflict=in_conflict)
    tally.touched(now, live=len(rows), conflicts=opened)
    counts.committed += len(rows)


def _fresh_deposits(
    user_id: str,
    deposits: list[_DepositLine],
    mine: Mapping[uuid.UUID, uuid.UUID],
    taken: set[uuid.UUID],
    counts: KindCounts,
) -> tuple[list[_DepositLine], list[tuple[str, str, str, str]]]:
    """The deposits not written before, each given the id it is written under.

    Also the ImportedRow rows of those moved to a new id; the others are counted duplicates.
    """
    fresh: list[_DepositLine] = []
    seen: set[uuid.UUID] = set()
    moved: list[tuple[str, str, str, str]] = []
    for deposit in deposits:
        if deposit.source in mine or deposit.source in seen:
            counts.duplicates += 1
            continue
        seen.add(deposit.source)
        # An id another owner holds: the deposit gets a new one, remembered under its source's.
        deposit.target = uuid.uuid4() if deposit.source in taken else deposit.source
        if deposit.target != deposit.source:
            moved.append((user_id, ImportedRow.DEPOSIT, str(deposit.source), str(deposit.target)))
        fresh.append(deposit)
    return fresh, moved


def _deposit_rows(
    user_id: str, fresh: list[_DepositLine]
) -> tuple[dict[str, NewDeposits], list[tuple[Any, ...]]]:
    """The deposits' new counts and texts bag by bag, and their rows as DEPOSIT_COLUMNS orders them."""
    by_bag: dict[str, NewDeposits] = {}
    # A batch's deposits share few scopes: each bag id is hashed once (its key keeps each facet's
    # type, as the bulk write's does, so 1 and True never share an id).
    bag_ids: dict[tuple[object, ...], str] = {}
    rows = []
    for deposit in fresh:
        draft, scope = deposit.draft, deposit.draft.scope
        memo = (*scope.facets, *map(type, scope.facets))
        bag = bag_ids.get(memo)
        if bag is None:
            bag = bag_ids[memo] = compute_bag_id(user_id, scope)
        new = by_bag.setdefault(bag, NewDeposits(scope))
        new.polarities.append((draft.polarity, deposit.created_at))
        new.texts.append(search_text(draft.content, scope.note))
        belief = draft.belief
        rows.append((
            deposit.target, user_id, bag, draft.content, draft.polarity, draft.evidence_grade,
            scope.model, scope.dataset, scope.env, scope.version, scope.n, scope.seed, scope.note,
            list(draft.tags), list(draft.artifact_refs), draft.author, draft.author_role, draft.task_id,
            deposit.channel, draft.repro_status, belief.key if belief else None, belief.value if belief else None,
            deposit.created_at,
        ))  # fmt: skip
    return by_bag, rows


def _claim_keys(user_id: str, deposits: Sequence[_DepositLine], now: datetime) -> None:
    """The deposits' idempotency keys, for the rest of their window (from the deposit's write).

    So a client's retry after the move is a replay (one the owner holds already stays).
    """
    keyed = [d for d in deposits if d.key is not None and d.created_at > now - WINDOW]
    if not keyed:
        return
    erased = forgotten_keys(user_id, [d.key for d in keyed if d.key], now)
    rows = [(user_id, d.key, d.payload_hash, d.target, d.created_at) for d in keyed if d.key not in erased]
    insert_rows(
        "deposits_idempotencyentry", IDEMPOTENCY_COLUMNS, rows, "ON CONFLICT (user_id, key) DO NOTHING"
    )


# --- Edges, retractions ----------------------------------------------------------------------


def _recount(user_id: str, bag_ids: Iterable[str], now: datetime) -> int:
    ids = sorted(set(bag_ids))
    if connection.vendor != "postgresql":
        return bags_recount(ids, user_id=user_id, now=now)
    live = import_batch.recount_bags(user_id, ids, now)
    bag_terms_refresh(bag_ids=ids)
    return live


def _locked(user_id: str, ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, Deposit]:
    """The owner's deposits of these ids, locked in id order, with what the batch reads of them.

    The order is the one a write locks what it contradicts in.
    """
    rows = (
        Deposit.objects.filter(user_id=user_id, id__in=list(set(ids)))
        .only("id", "bag_id", "retracted_at", "belief_key")
        .select_for_update(no_key=True)
        .order_by("pk")
    )
    return {row.pk: row for row in rows}


def _parsed(
    lines: Sequence[fmt.Line],
    parse: Callable[[Mapping[str, Any], datetime], tuple[Any, ...]],
    kind: str,
    outcome: _Batch,
    now: datetime,
) -> list[tuple[Any, ...]]:
    """Each line's number and what `parse` reads of it; a line it refuses is a failed line."""
    parsed = []
    for line in lines:
        try:
            parsed.append((line.number, *parse(line.data or {}, now)))
        except fmt.LineError as error:
            outcome.fail(line.number, invalid("line", str(error)), kind)
    return parsed


def _edge_line(data: Mapping[str, Any], now: datetime) -> tuple[uuid.UUID, uuid.UUID, str, datetime]:
    new, old = fmt.parse_id(data.get("from"), "from"), fmt.parse_id(data.get("to"), "to")
    if new == old:
        raise fmt.LineError("an edge's from and to are one deposit; a deposit cannot supersede itself")
    reason = data.get("reason") or ""
    if not isinstance(reason, str) or len(reason) > MAX_EDGE_REASON:
        raise fmt.LineError(f"reason must be text of at most {MAX_EDGE_REASON:,} characters")
    return new, old, reason, fmt.parse_time(data.get("created_at"), "created_at", now=now)


def _write_edges(
    importer: Importer, lines: Sequence[fmt.Line], outcome: _Batch, tally: Tally, now: datetime
) -> None:
    parsed = _parsed(lines, _edge_line, "edge", outcome, now)
    if not parsed:
        return
    user_id = importer.user_id
    ends = _resolve(user_id, [end for _, new, old, *_ in parsed for end in (new, old)])
    rows = _locked(user_id, ends.values())
    edges = _new_edges(user_id, parsed, ends, rows, outcome)
    if not edges:
        return
    Contradiction.objects.bulk_create(edges)
    outcome.count("edge").committed += len(edges)
    closers = _supersession_closers(edges, rows)
    if closers:
        live = _recount(user_id, closers, now)
        opened = episodes_sync(user_id=user_id, bag_ids=set(closers), now=now, closers=closers)
        tally.touched(now, live=live, conflicts=opened)


def _supersession_closers(
    edges: Sequence[Contradiction], rows: Mapping[uuid.UUID, Deposit]
) -> dict[str, Closer]:
    """The bags whose episodes the superseding edges close: each by its first such edge."""
    closers: dict[str, Closer] = {}
    for edge in edges:
        if edge.superseding:
            closers.setdefault(
                rows[edge.old_deposit_id].bag_id, (ConflictEpisode.SUPERSESSION, edge.new_deposit_id)
            )
    return closers


def _new_edges(
    user_id: str,
    parsed: Sequence[tuple[int, uuid.UUID, uuid.UUID, str, datetime]],
    ends: Mapping[uuid.UUID, uuid.UUID],
    rows: Mapping[uuid.UUID, Deposit],
    outcome: _Batch,
) -> list[Contradiction]:
    """The edges to write: each between two deposits the owner holds, not written before."""
    counts = outcome.count("edge")
    held = set(
        Contradiction.objects.filter(
            user_id=user_id, new_deposit_id__in=[ends[n] for _, n, *_ in parsed if n in ends]
        ).values_list("new_deposit_id", "old_deposit_id")
    )
    edges: list[Contradiction] = []
    for number, new, old, reason, created_at in parsed:
        missing = [str(end) for end in (new, old) if end not in ends or ends[end] not in rows]
        if missing:
            error = AtlasoError(
                MISSING_CONTRADICTS,
                "this edge names deposits that neither the file (above it) nor this owner holds",
                missing=missing,
            )
            outcome.fail(number, error, "edge")
            continue
        pair = (ends[new], ends[old])
        if pair in held:
            counts.duplicates += 1
            continue
        held.add(pair)
        # A correction retracted already supersedes nothing: its edge is kept for audit.
        superseding = rows[pair[0]].retracted_at is None
        edges.append(
            Contradiction(
                user_id=user_id, new_deposit_id=pair[0], old_deposit_id=pair[1], reason=reason,
                created_at=created_at, superseding=superseding,
            )
        )  # fmt: skip
    return edges


def _retraction_line(data: Mapping[str, Any], now: datetime) -> tuple[uuid.UUID, str, datetime]:
    target = fmt.parse_id(data.get("deposit_id"), "deposit_id")
    reason = data.get("reason") or ""
    if not isinstance(reason, str) or len(reason) > MAX_RETRACT_REASON:
        raise fmt.LineError(f"reason must be text of at most {MAX_RETRACT_REASON:,} characters")
    return target, reason, fmt.parse_time(data.get("retracted_at"), "retracted_at", now=now)


def _write_retractions(
    importer: Importer, lines: Sequence[fmt.Line], outcome: _Batch, tally: Tally, now: datetime
) -> None:
    counts = outcome.count("retraction")
    parsed = _parsed(lines, _retraction_line, "retraction", outcome, now)
    if not parsed:
        return
    user_id = importer.user_id
    targets = _resolve(user_id, [source for _, source, *_ in parsed])
    rows = _locked(user_id, targets.values())
    retracting = _new_retractions(parsed, targets, rows, outcome)
    if not retracting:
        return
    ids = sorted(retracting)
    _retract(ids, retracting)
    counts.committed += len(ids)
    _after_retractions(user_id, ids, rows, tally, now)


def _new_retractions(
    parsed: Sequence[tuple[Any, ...]],
    targets: Mapping[uuid.UUID, uuid.UUID],
    rows: Mapping[uuid.UUID, Deposit],
    outcome: _Batch,
) -> dict[uuid.UUID, tuple[datetime, str]]:
    """When and why each deposit the lines retract, not retracted before, is retracted."""
    counts = outcome.count("retraction")
    retracting: dict[uuid.UUID, tuple[datetime, str]] = {}
    for number, source, reason, at in parsed:
        row = rows.get(targets.get(source))  # type: ignore[arg-type]
        if row is None:
            message = f"this retraction names deposit {source}, which neither the file (above it) nor this owner holds"
            outcome.fail(number, AtlasoError(NOT_FOUND, message), "retraction")
        elif row.retracted_at is not None or row.pk in retracting:
            counts.duplicates += 1
        else:
            retracting[row.pk] = (at, reason)
    return retracting


def _retract(ids: Sequence[uuid.UUID], retracting: Mapping[uuid.UUID, tuple[datetime, str]]) -> None:
    """Set the soft-retract markers: one statement on PostgreSQL, a deposit at a time on SQLite."""
    if connection.vendor == "postgresql":
        import_batch.retract_set(ids, [retracting[i][0] for i in ids], [retracting[i][1] for i in ids])
        return
    for deposit_id in ids:
        at, reason = retracting[deposit_id]
        Deposit.objects.filter(pk=deposit_id, retracted_at__isnull=True).update(
            retracted_at=at, retracted_reason=reason
        )


def _after_retractions(
    user_id: str, ids: Sequence[uuid.UUID], rows: Mapping[uuid.UUID, Deposit], tally: Tally, now: datetime
) -> None:
    """What the retractions change beyond their deposits: the edges, bags, episodes and beliefs."""
    # A retracted correction supersedes nothing (domain.md, Live): what it corrected may be live again.
    corrected = Contradiction.objects.superseding().filter(new_deposit_id__in=ids)
    revived = set(corrected.values_list("old_deposit__bag_id", flat=True))
    corrected.update(superseding=False)
    closers: dict[str, Closer] = {rows[i].bag_id: (ConflictEpisode.RETRACTION, i) for i in ids}
    bags = set(closers) | revived
    live = _recount(user_id, bags, now)
    opened = episodes_sync(user_id=user_id, bag_ids=bags, now=now, closers=closers)
    tally.touched(now, live=live, conflicts=opened)
    believed = [str(i) for i in ids if rows[i].belief_key]
    beliefs_import.observations_withdraw_deposits(user_id=user_id, deposit_ids=believed, now=now)


# --- Observations, outcomes ------------------------------------------------------------------


def _observation_line(
    importer: Importer, data: Mapping[str, Any], now: datetime, tiers: Mapping[str, float]
) -> tuple[beliefs_import.ObservationDraft, uuid.UUID | None]:
    try:
        key = clean_belief_key(data.get("belief_key"))
        value = clean_value(data.get("value"))
        confidence = clean_content_confidence(data.get("content_confidence"))
    except BeliefInputError as error:
        raise fmt.LineError(f"{error.field}: {error.message}") from None
    observed_at = fmt.parse_time(data.get("observed_at"), "observed_at", now=now)
    taint = fmt.optional_text(data, "taint_tier", MAX_CHANNEL)
    if taint is not None and taint not in tiers:
        raise fmt.LineError(f"there is no tier {taint!r} here; the tiers are: {', '.join(sorted(tiers))}")
    channel, tier, ceiling = _observation_provenance(importer, data)
    deposit = data.get("deposit_id")
    source_deposit = None if deposit is None else fmt.parse_id(deposit, "deposit_id")
    arrived = data.get("arrived_at")
    draft = beliefs_import.ObservationDraft(
        key=key, value=value, observed_at=observed_at, channel=channel, tier=tier, ceiling=float(ceiling),
        taint_tier=taint, content_confidence=confidence, deposit_id=None,
        source_id=fmt.optional_text(data, "source_id", 200),
        idempotency_key=validate_idempotency_key(data.get("idempotency_key")),
        payload_hash=fmt.optional_text(data, "idempotency_payload_hash", 64),
        key_used_at=None if arrived is None else fmt.parse_time(arrived, "arrived_at", now=now),
    )  # fmt: skip
    return draft, source_deposit


def _observation_provenance(importer: Importer, data: Mapping[str, Any]) -> tuple[str, str, Any]:
    """The channel, tier and ceiling an observation is recorded with: the import's, or its own."""
    channel, tier, ceiling = importer.channel, importer.tier, importer.ceiling
    if importer.keep_provenance:
        channel = fmt.optional_text(data, "channel", MAX_CHANNEL)
        tier = fmt.optional_text(data, "tier", MAX_CHANNEL)
        ceiling = data.get("ceiling")
        if not channel or not tier or not is_ceiling(ceiling):
            raise fmt.LineError(
                "an observation needs its channel, its tier and the tier's ceiling (0 < ceiling < 1)"
            )
    if channel is None or tier is None or ceiling is None:
        raise fmt.LineError("an observation needs the writer's channel; this import has none")
    return channel, tier, ceiling


def _write_observations(
    importer: Importer, lines: Sequence[fmt.Line], outcome: _Batch, now: datetime
) -> None:
    counts = outcome.count("observation")
    if not lines:
        return
    user_id = importer.user_id
    parsed = _parsed_observations(importer, lines, outcome, now)
    drafts, digests, retracted = _new_observations(user_id, parsed, outcome)
    if not drafts:
        return
    ids = beliefs_import.observations_append(
        user_id=user_id, drafts=drafts, retracted=sorted(retracted), now=now
    )
    insert_rows(
        ImportedRow._meta.db_table,
        IMPORTED_ROW_COLUMNS,
        [
            (user_id, ImportedRow.OBSERVATION, digest, str(revision))
            for digest, revision in zip(digests, ids, strict=True)
        ],
    )
    counts.committed += len(drafts)


def _parsed_observations(
    importer: Importer, lines: Sequence[fmt.Line], outcome: _Batch, now: datetime
) -> list[tuple[int, str, beliefs_import.ObservationDraft, uuid.UUID | None]]:
    """Each observation line's number, digest, draft and the deposit it names; the others fail."""
    tiers = beliefs_import.known_tiers()
    parsed = []
    for line in lines:
        data = line.data or {}
        try:
            draft, source_deposit = _observation_line(importer, data, now, tiers)
        except (fmt.LineError, AtlasoError) as error:
            failure = error if isinstance(error, AtlasoError) else invalid("line", str(error))
            outcome.fail(line.number, failure, "observation")
            continue
        parsed.append((line.number, fmt.observation_digest(data), draft, source_deposit))
    return parsed


def _new_observations(
    user_id: str,
    parsed: Sequence[tuple[int, str, beliefs_import.ObservationDraft, uuid.UUID | None]],
    outcome: _Batch,
) -> tuple[list[beliefs_import.ObservationDraft], list[str], set[str]]:
    """The observations not imported before, each tied to the owner's deposit it names.

    Also their digests, and which of those deposits are retracted.
    """
    counts = outcome.count("observation")
    done = set(
        ImportedRow.objects.filter(
            user_id=user_id, kind=ImportedRow.OBSERVATION, source__in=[digest for _, digest, *_ in parsed]
        ).values_list("source", flat=True)
    )
    ends = _resolve(user_id, [s for *_, s in parsed if s is not None])
    rows = _locked(user_id, ends.values())
    drafts: list[beliefs_import.ObservationDraft] = []
    digests: list[str] = []
    retracted: set[str] = set()
    for number, digest, draft, source_deposit in parsed:
        if digest in done:
            counts.duplicates += 1
            continue
        if source_deposit is not None:
            row = rows.get(ends.get(source_deposit))  # type: ignore[arg-type]
            if row is None:
                message = f"this observation names deposit {source_deposit}, which neither the file (above it) nor this owner holds"
                outcome.fail(number, AtlasoError(NOT_FOUND, message), "observation")
                continue
            draft = replace(draft, deposit_id=str(row.pk))
            if row.retracted_at is not None:
                retracted.add(str(row.pk))
        done.add(digest)
        drafts.append(draft)
        digests.append(digest)
    return drafts, digests, retracted


def _outcome_line(data: Mapping[str, Any], now: datetime) -> beliefs_import.OutcomeDraft:
    try:
        key = clean_belief_key(data.get("belief_key"))
        value = clean_value(data.get("confirmed_value"))
    except BeliefInputError as error:
        raise fmt.LineError(f"{error.field}: {error.message}") from None
    before = data.get("verdict_before")
    probability = data.get("top_probability")
    if before is not None and not isinstance(before, dict):
        raise fmt.LineError("verdict_before must be the belief_verdict object the outcome kept")
    if probability is not None and (
        isinstance(probability, bool) or not isinstance(probability, (int, float))
    ):
        raise fmt.LineError("top_probability must be a number from 0 to 1")
    return beliefs_import.OutcomeDraft(
        key=key, confirmed_value=value, confirmed_by=fmt.optional_text(data, "confirmed_by", 150),
        created_at=fmt.parse_time(data.get("created_at"), "created_at", now=now),
        top_value=fmt.optional_text(data, "top_value", 500),
        top_probability=None if probability is None else float(probability),
        tier=fmt.optional_text(data, "tier", MAX_CHANNEL), verdict_before=before,
    )  # fmt: skip


def _write_outcomes(importer: Importer, lines: Sequence[fmt.Line], outcome: _Batch, now: datetime) -> None:
    counts = outcome.count("outcome")
    drafts = []
    for line in lines:
        try:
            drafts.append(_outcome_line(line.data or {}, now))
        except fmt.LineError as error:
            outcome.fail(line.number, invalid("line", str(error)), "outcome")
    written = beliefs_import.outcomes_import(user_id=importer.user_id, drafts=drafts)
    counts.committed += sum(written)
    counts.duplicates += len(written) - sum(written)


__all__ = ["FORMATS", "FailedLine", "ImportResult", "KindCounts", "owner_import"]
