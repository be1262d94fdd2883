"""Files moving a whole memory: the export written as it arrives, the import read as it is sent.

Both clients use these (the async one through the same code: a file is read and written
in pieces here, whichever loop sends them). An export is written to `<name>.part` and renamed
once whole, so a cut connection never leaves a file that looks complete; its name ending in
`.gz` makes it gzip. An import is read from its start for each attempt, and metered as it goes:
lines, deposits and bytes sent, read from the file's own header where it has one.
"""

from __future__ import annotations

import json
import os
import re
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Union

from atlaso._errors import InputValidationError
from atlaso._types import ExportHeader

PathOrFile = Union[str, "os.PathLike[str]", IO[bytes]]
PIECE = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"
_DEPOSIT_LINE = re.compile(rb'"kind"\s*:\s*"deposit"')


def _is_path(target: PathOrFile) -> bool:
    return isinstance(target, (str, os.PathLike))


class ExportSink:
    """Where an export is written; reads its header on the way."""

    def __init__(self, target: PathOrFile) -> None:
        self.target = target
        self.path = Path(target) if _is_path(target) else None  # type: ignore[arg-type]
        self.gzip = self.path is not None and self.path.name.endswith(".gz")
        self._file: IO[bytes] | None = None
        self._head = b""
        self._inflater: Any = None
        self._compressor: Any = None
        self.header: ExportHeader | None = None
        self.bytes = 0

    def open(self, *, arrives_gzipped: bool) -> None:
        """Start writing; `arrives_gzipped`: the bytes come compressed (and are kept so when wanted)."""
        if self.path is not None:
            self._part = self.path.with_name(self.path.name + ".part")
            self._file = open(self._part, "wb")  # noqa: SIM115 (closed by finish or abandon)
        else:
            self._file = self.target  # type: ignore[assignment]
        if arrives_gzipped:
            self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        if self.gzip and not arrives_gzipped:
            self._compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        self._keep_raw = arrives_gzipped == self.gzip

    def write(self, chunk: bytes) -> None:
        """A piece as it arrived (compressed when `arrives_gzipped`)."""
        assert self._file is not None
        plain = chunk
        if self._inflater is not None and (self.header is None or not self._keep_raw):
            plain = self._inflater.decompress(chunk)
        if self.header is None:
            self._read_header(plain)
        out = chunk if self._keep_raw else plain
        if self._compressor is not None:
            out = self._compressor.compress(out)
        if out:
            self._file.write(out)
            self.bytes += len(out)

    def _read_header(self, plain: bytes) -> None:
        self._head += plain
        end = self._head.find(b"\n")
        if end >= 0:
            self.header = ExportHeader.from_wire(json.loads(self._head[:end]))
            self._head = b""

    def finish(self) -> ExportHeader:
        assert self._file is not None
        if self._compressor is not None:
            tail = self._compressor.flush()
            self._file.write(tail)
            self.bytes += len(tail)
        if self.path is not None:
            self._file.close()
            os.replace(self._part, self.path)
        if self.header is None:
            raise InputValidationError("the server's answer held no export header")
        return self.header

    def abandon(self) -> None:
        """A cut transfer: the part written so far goes, under the name it never took."""
        if self.path is not None and self._file is not None:
            self._file.close()
            Path(self._part).unlink(missing_ok=True)


@dataclass(frozen=True, slots=True)
class ImportProgress:
    """How far an import has been sent: lines, deposits, bytes, and the time since it started.

    Where the file says how many lines it holds, also `total_lines` and the time left.
    """

    lines: int
    deposits: int
    bytes: int
    total_bytes: int | None
    total_lines: int | None
    seconds: float

    @property
    def deposits_per_second(self) -> float:
        return self.deposits / self.seconds if self.seconds > 0 else 0.0

    @property
    def seconds_left(self) -> float | None:
        """By lines when the file counts them, else by bytes."""
        if self.total_lines and self.lines:
            return self.seconds * (self.total_lines - self.lines) / self.lines
        if self.total_bytes and self.bytes:
            return self.seconds * (self.total_bytes - self.bytes) / self.bytes
        return None


Progress = Callable[[ImportProgress], object]


class ImportSource:
    """An import's body: a path (opened for each attempt) or a file (read from where it stood)."""

    def __init__(self, source: PathOrFile, *, progress: Progress | None = None) -> None:
        self.source = source
        self.progress = progress
        if _is_path(source):
            self.length: int | None = os.path.getsize(source)  # type: ignore[arg-type]
            self._start = 0
        else:
            handle: IO[bytes] = source  # type: ignore[assignment]
            self._start = handle.tell() if handle.seekable() else -1
            self.length = os.fstat(handle.fileno()).st_size - self._start if _has_fileno(handle) else None
        self._sent_once = False

    def _open(self) -> tuple[IO[bytes], bool]:
        if _is_path(self.source):
            return open(self.source, "rb"), True  # type: ignore[arg-type]
        handle: IO[bytes] = self.source  # type: ignore[assignment]
        if self._sent_once:
            if self._start < 0:
                raise InputValidationError("the import's file cannot be read again from its start to retry")
            handle.seek(self._start)
        self._sent_once = True
        return handle, False

    def chunks(self) -> Iterator[bytes]:
        """The body from its start, a piece at a time, metered."""
        handle, owned = self._open()
        meter = _Meter(self.length, self.progress)
        try:
            while chunk := handle.read(PIECE):
                meter.sent(chunk)
                yield chunk
        finally:
            meter.done()
            if owned:
                handle.close()

    async def achunks(self) -> AsyncIterator[bytes]:
        """The same pieces, for httpx.AsyncClient (a local file's reads are short)."""
        for chunk in self.chunks():
            yield chunk


def _has_fileno(handle: IO[bytes]) -> bool:
    try:
        handle.fileno()
    except (OSError, AttributeError, ValueError):
        return False
    return True


class _Meter:
    """Counts what is sent: bytes, lines and deposit lines (of the plain text, gzip or not)."""

    def __init__(self, total_bytes: int | None, progress: Progress | None) -> None:
        self.total_bytes = total_bytes
        self.progress = progress
        self.started = time.monotonic()
        self.bytes = self.lines = self.deposits = 0
        self.total_lines: int | None = None
        self._inflater: Any = None
        self._first = True
        self._head = b""
        self._header_read = False
        self._tail = b""
        self._last = 0.0

    def sent(self, chunk: bytes) -> None:
        if self.progress is None:
            return
        if self._first:
            self._first = False
            if chunk.startswith(GZIP_MAGIC):
                self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self.bytes += len(chunk)
        plain = chunk
        if self._inflater is not None:
            try:
                plain = self._inflater.decompress(chunk)
            except zlib.error:
                self._inflater, plain = None, b""
        self._count(plain)
        now = time.monotonic()
        if now - self._last >= 0.1:
            self._last = now
            self.progress(self.snapshot())

    def _count(self, plain: bytes) -> None:
        if not self._header_read:
            self._head += plain
            end = self._head.find(b"\n")
            if end >= 0 or len(self._head) > 1 << 20:
                self.total_lines = _total_lines(self._head[:end]) if end >= 0 else None
                self._header_read, self._head = True, b""
        self.lines += plain.count(b"\n")
        # A line cut between two pieces is counted in the piece that ends it.
        joined = self._tail + plain
        cut = joined.rfind(b"\n")
        whole, self._tail = (joined[: cut + 1], joined[cut + 1 :]) if cut >= 0 else (b"", joined[-4096:])
        self.deposits += len(_DEPOSIT_LINE.findall(whole))

    def snapshot(self) -> ImportProgress:
        return ImportProgress(
            lines=self.lines, deposits=self.deposits, bytes=self.bytes, total_bytes=self.total_bytes,
            total_lines=self.total_lines, seconds=time.monotonic() - self.started,
        )  # fmt: skip

    def done(self) -> None:
        if self.progress is not None:
            self.progress(self.snapshot())


def _total_lines(first: bytes) -> int | None:
    try:
        header = json.loads(first)
    except ValueError:
        return None
    if (
        isinstance(header, dict)
        and header.get("kind") == "atlaso_export"
        and isinstance(header.get("counts"), dict)
    ):
        return 1 + sum(int(v) for v in header["counts"].values() if isinstance(v, int))
    return None
