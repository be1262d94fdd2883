"""The gunicorn worker `make run` serves with: gevent's, bounded against slow and hostile clients.

A gthread worker gives each connection a thread while it reads the request, so 16 clients that
send a header line every 2 s held all of `make run`'s 2 × 8 threads and nothing else was
answered (docs/BENCHMARKS.md, "Slow clients"). Here a connection costs a greenlet while it is
read, and the application only ever sees a complete request:

- the request line and headers must arrive within `WEB_HEADER_TIMEOUT` seconds of the
  connection opening (or of the previous answer on a kept-alive one), else it is closed;
- the body is read whole (in memory up to 1 MiB, then in a temporary file) before the
  application runs, within `WEB_BODY_TIMEOUT` seconds, else a 408;
- at most `threads` requests (WEB_THREADS) run the application at once in a worker; the others
  wait their turn without holding a database connection, and at most `worker_connections`
  (WEB_CONNECTIONS) connections are open per worker (the rest wait in the listen backlog);
- a request gunicorn refuses before the application (a request line over 8,190 bytes: 414;
  malformed: 400; too many or too large headers: 431) is answered in the API's error envelope.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, BinaryIO

import gevent
from gevent.lock import BoundedSemaphore
from gunicorn.http import errors as http_errors
from gunicorn.http.body import Body
from gunicorn.workers.ggevent import GeventWorker

from atlaso_site.lib.errors import VALIDATION_ERROR

# A body up to this size is held in memory while it is read; a larger one goes to a temporary file.
IN_MEMORY_BODY = 1024 * 1024
READ_CHUNK = 64 * 1024

_REFUSALS: tuple[tuple[type[Exception], int, str, str], ...] = (
    (http_errors.LimitRequestLine, 414, "URI Too Long", "request_line"),
    (http_errors.LimitRequestHeaders, 431, "Request Header Fields Too Large", "headers"),
    (http_errors.InvalidRequestLine, 400, "Bad Request", "request_line"),
    (http_errors.InvalidRequestMethod, 400, "Bad Request", "request_line"),
    (http_errors.InvalidHTTPVersion, 400, "Bad Request", "request_line"),
    (http_errors.InvalidHeaderName, 400, "Bad Request", "headers"),
    (http_errors.InvalidHeader, 400, "Bad Request", "headers"),
    (http_errors.ObsoleteFolding, 400, "Bad Request", "headers"),
    (http_errors.InvalidChunkSize, 400, "Bad Request", "body"),
    (http_errors.ChunkMissingTerminator, 400, "Bad Request", "body"),
    (http_errors.InvalidChunkExtension, 400, "Bad Request", "body"),
)


def error_answer(status: int, reason: str, field: str, message: str) -> bytes:
    """A whole HTTP response carrying the API's error envelope; the connection closes after it."""
    body = json.dumps(
        {"kind": "error", "error": {"code": VALIDATION_ERROR, "message": message, "field": field}}
    ).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def _setting(name: str) -> Any:
    # Read once the app has loaded: importing Django's settings in the master, before gevent
    # patches the worker, would load them there (gevent walks every object as it patches).
    from django.conf import settings

    return getattr(settings, name)


class _Buffered:
    """A body read ahead: what `Body` reads from instead of the socket, then the rest, if any
    (a chunked body longer than the API accepts is not held whole)."""

    def __init__(self, spool: BinaryIO, rest: Any) -> None:
        self.spool = spool
        self.rest = rest

    def read(self, size: int) -> bytes:
        return self.spool.read(size) or self.rest.read(size)


class AtlasoWorker(GeventWorker):
    """gevent's worker, with every read of a request bounded in time (see the module)."""

    def init_process(self) -> None:
        self.admission = BoundedSemaphore(max(1, self.cfg.threads))
        # Django keeps a database connection per thread, and here a thread is a greenlet, one per
        # open connection: a pool of as many connections as requests run at once shares them
        # instead (unless DATABASE_POOL_SIZE says otherwise). Set before the app loads settings.
        os.environ.setdefault("DATABASE_POOL_SIZE", str(max(1, self.cfg.threads)))
        super().init_process()

    def timeout_ctx(self) -> gevent.Timeout:
        # Around the reading of each request line and its headers (base_async.handle): silent,
        # so a connection that did not send a request in time is closed without an answer.
        return gevent.Timeout(_setting("WEB_HEADER_TIMEOUT"), False)

    def handle_request(self, listener_name: Any, req: Any, sock: Any, addr: Any) -> bool:
        if not self._read_body(req, sock):
            raise StopIteration()
        with self.admission:
            return super().handle_request(listener_name, req, sock, addr)

    def _read_body(self, req: Any, sock: Any) -> bool:
        """Read the body ahead within WEB_BODY_TIMEOUT; False when it did not come (a 408 sent)
        or the client went away before sending all it announced (nothing to answer)."""
        announced = getattr(req.body.reader, "length", None)  # None: chunked
        limit = _setting("DATA_UPLOAD_MAX_MEMORY_SIZE")
        if announced == 0 or (announced or 0) > limit:
            return True  # nothing to read, or refused on its Content-Length by the app, unread
        if req._expected_100_continue:
            self._send(sock, b"HTTP/1.1 100 Continue\r\n\r\n")
            req._expected_100_continue = False
        # Not a `with`: the spool outlives this call, as the request's body (closed with it).
        spool = tempfile.SpooledTemporaryFile(max_size=IN_MEMORY_BODY)  # noqa: SIM115
        seconds = _setting("WEB_BODY_TIMEOUT")
        try:
            with gevent.Timeout(seconds):
                read = _copy(req.body, spool, limit)
        except gevent.Timeout:
            spool.close()
            message = f"the request body did not arrive within {seconds} s"
            self._send(sock, error_answer(408, "Request Timeout", "body", message))
            return False
        if announced is not None and read < announced:
            spool.close()
            return False
        spool.seek(0)
        req.body = Body(_Buffered(spool, req.body))
        return True

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        for kind, status, reason, field in _REFUSALS:
            if isinstance(exc, kind):
                self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
                self._send(client, error_answer(status, reason, field, _message(status, exc)))
                return
        super().handle_error(req, client, addr, exc)

    def _send(self, sock: Any, answer: bytes) -> None:
        try:
            sock.sendall(answer)
        except OSError:
            self.log.debug("could not send the refusal")


def _copy(body: Body, spool: BinaryIO, limit: int) -> int:
    """Copy `body` into `spool` until it ends or passes `limit` bytes; the bytes copied."""
    read = 0
    while read <= limit and (chunk := body.read(READ_CHUNK)):
        spool.write(chunk)
        read += len(chunk)
    return read


def _message(status: int, exc: BaseException) -> str:
    if status == 414:
        return "the request line is longer than 8,190 bytes; the API reads a query string of at most 7 KiB"
    return f"the server could not read this request: {exc}"
