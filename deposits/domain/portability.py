"""The `atlaso-export` v1 format and mem0's export, read as an importer reads them: pure rules.

`read_lines` turns a body (ndjson, or gzip recognised by its first bytes) into numbered lines,
in constant memory; `parse_header` judges the first; `mem0_lines` turns a mem0 `get_all` export
into deposit lines of this format (portability.md says how each field maps).
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson

FORMAT = "atlaso_export"
VERSION = 1
KINDS = ("deposit", "edge", "retraction", "observation", "outcome")
GZIP_MAGIC = b"\x1f\x8b"
READ_SIZE = 64 * 1024
# No line of a valid file comes near this (a deposit of 8,000 characters of 4 bytes, every list
# at its limit, is under 100 kB).
MAX_LINE_BYTES = 1024 * 1024
# A time more than this ahead of the server's clock is refused, as an observation's claim is.
MAX_FUTURE_SKEW = timedelta(minutes=5)
# The namespace of the ids a mem0 memory's deposit takes: the same memory gets the same id.
MEM0_NAMESPACE = uuid.UUID("6f1d8f5e-2b5c-4f0e-9a57-6d3c1b0a4e21")
MAX_TAGS = 32
MAX_TAG = 64


class BrokenInput(Exception):
    """The body cannot be read on: not the gzip its first bytes announce, or cut inside it."""


class LineError(Exception):
    """One line is not a line of this format: the import fails it and reads on."""


@dataclass(frozen=True, slots=True)
class Line:
    """A numbered line of the body (1 is the first), parsed, or why it could not be."""

    number: int
    data: dict[str, Any] | None
    size: int
    error: str | None = None
    # The line spells a character as an escape (\uXXXX): only then can a string of it hold NUL
    # or a lone surrogate (JSON text has neither raw), so only then is it asked.
    escaped: bool = True
    # The kind an unreadable line was meant as, where its source says (a mem0 memory is a
    # deposit): it is counted as that kind's failure.
    kind: str | None = None


Read = Callable[[int], bytes]


def _counted(chunks: Iterator[bytes], limit: int | None) -> Iterator[bytes]:
    """`chunks`, at most `limit` bytes of them: past it, BrokenInput."""
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if limit is not None and total > limit:
            raise BrokenInput(f"the body is larger than this server reads ({limit:,} bytes)")
        yield chunk


def _plain(read: Read, first: bytes) -> Iterator[bytes]:
    chunk = first
    while chunk:
        yield chunk
        chunk = read(READ_SIZE)


def _gunzipped(read: Read, first: bytes) -> Iterator[bytes]:
    """The body inflated, a bounded piece per step, since a small body may inflate enormously.

    A gzip file may hold several members one after another (`cat a.gz b.gz`).
    """
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    data = first
    while data or (data := read(READ_SIZE)):
        try:
            out = inflater.decompress(data, READ_SIZE)
        except zlib.error as error:
            raise BrokenInput(f"the body starts as gzip but is not gzip ({error})") from None
        data = inflater.unconsumed_tail
        if out:
            yield out
        if inflater.eof:
            data = inflater.unused_data + data
            while len(data) < len(GZIP_MAGIC) and (more := read(READ_SIZE)):
                data += more
            if not data:
                return
            if not data.startswith(GZIP_MAGIC):
                raise BrokenInput("the body holds data after the end of its gzip stream")
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    raise BrokenInput("the gzip stream ends before its end (the body was cut short)")


def body_chunks(read: Read, limit: int | None = None) -> Iterator[bytes]:
    """The body's bytes, gunzipped when it starts as gzip does, at most `limit` of them.

    Counted after decompression when gzip; past the limit, BrokenInput.
    """
    first = read(READ_SIZE)
    chunks = _gunzipped(read, first) if first.startswith(GZIP_MAGIC) else _plain(read, first)
    return _counted(chunks, limit)


def read_lines(read: Read, *, limit: int | None = None) -> Iterator[Line]:
    """Every line of the body, numbered from 1; blank lines are skipped (their numbers kept).

    A line that is not a JSON object with a `kind`, is longer than MAX_LINE_BYTES, or is cut short
    (the body's last line, without its newline, that does not parse) comes with its error.
    BrokenInput is raised where the body itself cannot be read on.
    """
    number = 0
    pending = _Pending()
    for chunk in body_chunks(read, limit):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            number += 1
            line = pending.take(chunk[start:end], number, last=False)
            if line is not None:
                yield line
            start = end + 1
        pending.keep(chunk[start:])
    line = pending.take(b"", number + 1, last=True)
    if line is not None:
        yield line


class _Pending:
    """The start of a line not ended yet: kept up to MAX_LINE_BYTES, past which only its fault is."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.too_long = False

    def keep(self, piece: bytes) -> None:
        if not self.too_long and piece:
            self.parts.append(piece)
            self.size += len(piece)
            if self.size > MAX_LINE_BYTES:
                self.too_long, self.parts, self.size = True, [], 0

    def take(self, end: bytes, number: int, *, last: bool) -> Line | None:
        """The line this piece ends (None for a blank one), and a fresh start."""
        too_long = self.too_long or self.size + len(end) > MAX_LINE_BYTES
        raw = b"" if too_long else b"".join([*self.parts, end])
        self.parts, self.size, self.too_long = [], 0, False
        if too_long:
            return Line(number, None, 0, f"the line is longer than {MAX_LINE_BYTES:,} bytes")
        return _parsed(number, raw, last=last) if raw.strip() else None


# A run of digits that may be an integer past 64 bits (-9999999999999999999 is one), which orjson
# reads as a float.
_LONG_DIGITS = re.compile(rb"\d{19}")


def loads(raw: bytes) -> Any:
    """A line's JSON, as Python's json reads it, read by orjson where the two agree.

    orjson reads an export's lines four times faster. What it reads otherwise is left to json: a
    line it refuses (json refuses it too, in its own words, or reads NaN or a lone surrogate, which
    the import then names), and a line holding 19 digits in a row (perhaps an integer past 64 bits,
    which json keeps whole).
    """
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)
    return json.loads(raw) if _LONG_DIGITS.search(raw) else data


def _parsed(number: int, raw: bytes, *, last: bool) -> Line:
    try:
        data = loads(raw)
    except (ValueError, RecursionError) as error:
        if last:
            return Line(number, None, len(raw), "the line is cut short (the body ends inside it)")
        return Line(number, None, len(raw), f"the line is not JSON ({error})")
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        return Line(number, None, len(raw), 'the line is not a JSON object with a "kind"')
    return Line(number, data, len(raw), escaped=b"\\u" in raw)


def parse_header(data: Mapping[str, Any] | None, error: str | None) -> str | None:
    """Why the first line is not an `atlaso-export` v1 header, or None when it is."""
    if data is None:
        return f"the first line must be the atlaso_export header, and it cannot be read: {error}"
    if data.get("kind") != FORMAT:
        return (
            f'the first line must be the header {{"kind": "{FORMAT}", "version": {VERSION}, …}}; '
            f"it is a line of kind {data.get('kind')!r}"
        )
    version = data.get("version")
    if version != VERSION or isinstance(version, bool):
        return (
            f"this file is atlaso-export version {version!r}; this server reads version {VERSION}. "
            "Export it again from a server of this version, or upgrade this one"
        )
    return None


def parse_time(value: Any, field: str, *, now: datetime) -> datetime:
    """An ISO 8601 time with an offset, not more than MAX_FUTURE_SKEW ahead of `now`."""
    if not isinstance(value, str):
        raise LineError(
            f"{field} must be an ISO 8601 time with an offset, e.g. 2025-06-01T09:30:00.000000+00:00"
        )
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise LineError(f"{field} is not an ISO 8601 time: {value[:64]!r}") from None
    if moment.utcoffset() is None:
        raise LineError(f"{field} has no offset: {value[:64]!r}")
    if moment > now + MAX_FUTURE_SKEW:
        raise LineError(
            f"{field} is in the future ({value[:64]}); the server's clock reads {now.isoformat()}"
        )
    return moment


def parse_id(value: Any, field: str) -> uuid.UUID:
    if not isinstance(value, str):
        raise LineError(f"{field} must be a deposit id (a UUID)")
    try:
        return uuid.UUID(value)
    except ValueError:
        raise LineError(f"{field} is not a UUID: {value[:64]!r}") from None


def optional_text(data: Mapping[str, Any], field: str, limit: int) -> str | None:
    value = data.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise LineError(f"{field} must be text of at most {limit:,} characters")
    return value


def observation_digest(data: Mapping[str, Any]) -> str:
    """What tells one exported observation from every other.

    The fields that make it, with its arrival sequence where it was exported, so that two equal
    claims at one instant stay two.
    """
    fields = [
        data.get(name)
        for name in ("belief_key", "value", "observed_at", "channel", "content_confidence", "taint_tier",
                     "deposit_id", "source_id", "sequence")
    ]  # fmt: skip
    canonical = json.dumps(fields, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.blake2b(canonical.encode("utf-8"), digest_size=16).hexdigest()


# --- mem0 ---------------------------------------------------------------------------------


def mem0_memories(document: Any) -> list[Mapping[str, Any]]:
    """The memories of a mem0 export: `{"results": [...]}` (get_all) or a bare list of them."""
    items = document.get("results") if isinstance(document, Mapping) else document
    if not isinstance(items, list):
        raise LineError(
            'a mem0 export is {"results": [memory, …]} (what get_all returns) or a list of memories'
        )
    return items


def _tag_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def mem0_tags(metadata: Any) -> list[str]:
    """A memory's metadata as tags `mem0:key=value`, each cut to the tag limit, at most MAX_TAGS."""
    if not isinstance(metadata, Mapping):
        return []
    tags = []
    for key in sorted(metadata, key=str):
        tag = f"mem0:{key}={_tag_text(metadata[key])}"
        tags.append(tag if len(tag) <= MAX_TAG else tag[: MAX_TAG - 1] + "…")
    return list(dict.fromkeys(tags))[:MAX_TAGS]


def mem0_line(memory: Any, *, now: datetime) -> dict[str, Any]:
    """One mem0 memory as a deposit line: an `open`, `anecdotal` claim of its latest text.

    Its metadata become tags, its id is kept as the artifact ref `mem0:<id>` (and, hashed, as the
    deposit's id, so importing it again is a duplicate), and it is dated when that text was written.
    """
    if not isinstance(memory, Mapping):
        raise LineError("a mem0 memory must be an object {id, memory, metadata, created_at, …}")
    mem0_id = memory.get("id")
    text = memory.get("memory")
    if not isinstance(mem0_id, (str, int)) or isinstance(mem0_id, bool) or str(mem0_id) == "":
        raise LineError("a mem0 memory needs its id")
    if not isinstance(text, str):
        raise LineError(f"mem0 memory {str(mem0_id)[:64]!r} has no text (memory)")
    written = memory.get("updated_at") or memory.get("created_at")
    created_at = now.isoformat() if written is None else _mem0_time(written, now)
    return {
        "kind": "deposit",
        "id": str(uuid.uuid5(MEM0_NAMESPACE, str(mem0_id))),
        "content": text,
        "polarity": "open",
        "evidence_grade": "anecdotal",
        "tags": mem0_tags(memory.get("metadata")),
        "artifact_refs": [f"mem0:{mem0_id}"[:512]],
        "created_at": created_at,
    }


def _mem0_time(value: Any, now: datetime) -> str:
    """mem0 writes its times with an offset, or naive in UTC (older versions): read as UTC then."""
    if not isinstance(value, str):
        raise LineError("a mem0 memory's created_at and updated_at must be ISO 8601 times")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise LineError(f"a mem0 time is not ISO 8601: {value[:64]!r}") from None
    if moment.utcoffset() is None:
        moment = moment.replace(tzinfo=now.tzinfo)
    return moment.isoformat()


def mem0_lines(memories: Iterable[Any], *, now: datetime) -> Iterator[Line]:
    """The memories as numbered deposit lines (line n is the n-th memory)."""
    for number, memory in enumerate(memories, start=1):
        try:
            yield Line(number, mem0_line(memory, now=now), 0)
        except LineError as error:
            yield Line(number, None, 0, str(error), kind="deposit")
