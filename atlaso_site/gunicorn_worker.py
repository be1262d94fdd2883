"""The gunicorn worker `make run` serves with: gevent's, bounded against slow and hostile clients.

A gthread worker gives each connection a thread while it reads the request, so 16 clients that
send a header line every 2 s held all of `make run`'s 2 × 8 threads and nothing else was
answered (docs/BENCHMARKS.md, "Slow clients"). Here a connection costs a greenlet, and a request
holds one of the worker's `threads` request slots (WEB_THREADS, each with its database
connection) only while the application computes its answer:

- the request line and headers must arrive within `WEB_HEADER_TIMEOUT` seconds of the
  connection opening (or of the previous answer on a kept-alive one), else it is closed;
- before a byte of the body is read, the key, its permission and its owner are checked and the
  route's body limit is found (atlaso_site.admission): a request refused whatever its body
  holds, or announcing more than its route reads, is answered without reading the body (and
  its connection closed); nothing is written to disk for an anonymous client;
- the body is read whole (in memory up to 1 MiB, then in a temporary file), no further than
  the route's limit, within `WEB_BODY_TIMEOUT` seconds, else a 408;
- the answer is written after the request slot is given back (a streamed answer, whose
  generator may still read the database, keeps it until it ends), each piece of at most 64 KiB
  within `WEB_SEND_TIMEOUT` seconds, else the connection is closed: a client that stops
  reading holds a greenlet and a socket, never a slot;
- at most `worker_connections` (WEB_CONNECTIONS) connections are open per worker (the rest
  wait in the listen backlog);
- a request gunicorn refuses before the application (a request line over 8,190 bytes: 414;
  malformed: 400; too many or too large headers: 431) is answered in the API's error envelope.
"""

from __future__ import annotations

import io
import json
import os
import socket
import tempfile
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

import gevent
import gevent.local
from gevent.lock import BoundedSemaphore
from gunicorn.http import errors as http_errors
from gunicorn.http import wsgi
from gunicorn.http.body import Body
from gunicorn.workers.ggevent import GeventWorker

from atlaso_site.lib.errors import VALIDATION_ERROR
from atlaso_site.observability.context import HEADER, request_id_for

if TYPE_CHECKING:
    from atlaso_site.access.api_keys import BodyAllowance

# A body up to this size is held in memory while it is read; a larger one goes to a temporary file.
IN_MEMORY_BODY = 1024 * 1024
READ_CHUNK = 64 * 1024
# An answer is written in pieces of this size, each within WEB_SEND_TIMEOUT.
WRITE_PIECE = 64 * 1024
# How long, and how much, an unread body is discarded after its refusal has been sent.
LINGER_SECONDS = 2.0
LINGER_BYTES = 64 * 1024 * 1024

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


def error_answer(status: int, reason: str, field: str, message: str, request_id: str) -> bytes:
    """A whole HTTP response carrying the API's error envelope and the request's id.

    The connection closes after it.
    """
    error = {"code": VALIDATION_ERROR, "message": message, "field": field, "request_id": request_id}
    body = json.dumps({"kind": "error", "error": error}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
        f"{HEADER}: {request_id}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def sent_request_id(req: Any) -> str:
    """The id of a request answered here, before the application.

    The one it sent when sane; a new one when it is not, or when its headers were not read.
    """
    headers = getattr(req, "headers", None) or ()
    sent = next((value for name, value in headers if name.upper() == HEADER.upper()), None)
    return request_id_for(sent)


def _setting(name: str) -> Any:
    # Read once the app has loaded: importing Django's settings in the master, before gevent
    # patches the worker, would load them there (gevent walks every object as it patches).
    from django.conf import settings

    return getattr(settings, name)


class _Buffered:
    """A body read ahead: what `Body` reads from instead of the socket, then the rest, if any.

    A chunked body longer than its route reads is not held whole.
    """

    def __init__(self, spool: BinaryIO, rest: Any) -> None:
        self.spool = spool
        self.rest = rest

    def read(self, size: int) -> bytes:
        return self.spool.read(size) or self.rest.read(size)


class _Nothing:
    """The body of a request answered without reading it."""

    def read(self, size: int) -> bytes:
        return b""


class _Pieces:
    """A whole answer, handed to the socket a piece at a time.

    The send timeout then bounds each piece, so a slow but reading client gets a large answer
    and a stalled one is cut.
    """

    def __init__(self, response: Any) -> None:
        self.response = response

    def __iter__(self) -> Iterator[bytes]:
        for part in self.response:
            for start in range(0, len(part), WRITE_PIECE):
                yield part[start : start + WRITE_PIECE]

    def close(self) -> None:
        self.response.close()


class _SlotUntilClosed:
    """A streamed answer: its generator may read the database, so its slot is kept until it ends."""

    def __init__(self, response: Any, slot: BoundedSemaphore) -> None:
        self.response = response
        self.slot = slot
        self.released = False

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.response)

    def close(self) -> None:
        try:
            if hasattr(self.response, "close"):
                self.response.close()
        finally:
            if not self.released:
                self.released = True
                self.slot.release()


class AtlasoWorker(GeventWorker):
    """gevent's worker, with every read and write of a request bounded (see the module)."""

    def init_process(self) -> None:
        self.admission = BoundedSemaphore(max(1, self.cfg.threads))
        # What this greenlet's request is, for the application's environ (see _in_a_slot).
        self.current = gevent.local.local()
        # Django keeps a database connection per thread, and here a thread is a greenlet, one per
        # open connection: a pool of as many connections as requests run at once shares them
        # instead (unless DATABASE_POOL_SIZE says otherwise). Set before the app loads settings.
        os.environ.setdefault("DATABASE_POOL_SIZE", str(max(1, self.cfg.threads)))
        super().init_process()

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self.wsgi = self._in_a_slot(self.wsgi)

    def timeout_ctx(self) -> gevent.Timeout:
        # Around the reading of each request line and its headers (base_async.handle): silent,
        # so a connection that did not send a request in time is closed without an answer.
        return gevent.Timeout(_setting("WEB_HEADER_TIMEOUT"), False)

    def handle_request(self, listener_name: Any, req: Any, sock: Any, addr: Any) -> bool:
        unread = self._refused_unread(listener_name, req, sock, addr)
        # A streamed body (an import) is the operation's to read as it arrives, within the send
        # timeout set below for each piece: it is not read ahead.
        if not unread and not req.body_streamed and not self._read_body(req, sock):
            raise StopIteration()
        self.current.body_unread = unread
        seconds = _setting("WEB_SEND_TIMEOUT")
        sock.settimeout(seconds)
        try:
            return super().handle_request(listener_name, req, sock, addr)
        except TimeoutError:
            self.log.warning(
                "closed the connection from ip=%s: it read nothing of its answer for %s s",
                (addr or ("",))[0],
                seconds,
            )
            raise StopIteration() from None
        finally:
            sock.settimeout(None)
            if unread:
                _linger(sock)

    def _in_a_slot(self, app: Any) -> Any:
        """`app`, run in one of the worker's request slots.

        The slot is given back before the answer is written, unless the answer is streamed
        (then when it ends).
        """
        from django.db import close_old_connections

        from atlaso_site.admission import BODY_UNREAD

        slot = self.admission

        def serve(environ: dict[str, Any], start_response: Any) -> Any:
            # The application must not take a body left unread for an empty one, should it
            # now admit what was refused a moment ago (the database back, a key just made).
            environ[BODY_UNREAD] = getattr(self.current, "body_unread", False)
            slot.acquire()
            try:
                response = app(environ, start_response)
            except BaseException:
                slot.release()
                raise
            if getattr(response, "streaming", False):
                return _SlotUntilClosed(response, slot)
            # The answer is whole (or a file): nothing it still needs holds a database
            # connection, so the connection goes back to the pool with the slot.
            close_old_connections()
            slot.release()
            if isinstance(response, environ["wsgi.file_wrapper"]):
                return response
            return _Pieces(response)

        return serve

    def _refused_unread(self, listener_name: Any, req: Any, sock: Any, addr: Any) -> bool:
        """Decide from the request line and headers how much body the request may send.

        When it will be refused whatever its body holds, or announces more than that, leave the
        body unread (the application answers it without reading) and close after the answer.
        """
        announced = getattr(req.body.reader, "length", None)  # None: chunked
        req.body_streamed = False
        if announced == 0:
            return False
        with self.admission:
            allowance = self._allowance(listener_name, req, sock, addr)
        req.body_allowance = allowance.bytes
        req.body_streamed = allowance.streamed
        if allowance.bytes > 0 and (announced is None or announced <= allowance.bytes):
            return False
        req.body = Body(_Nothing())
        req.must_close = True
        req._expected_100_continue = False  # the answer is final: the client need not send it
        return True

    def _allowance(self, listener_name: Any, req: Any, sock: Any, addr: Any) -> BodyAllowance:
        # Imported here, in the worker once gevent has patched it (see _setting).
        from django.core.handlers.wsgi import WSGIRequest
        from django.db import close_old_connections

        from atlaso_site.admission import NO_BODY, preflight

        expected_100_continue, req._expected_100_continue = req._expected_100_continue, False
        try:
            _, environ = wsgi.create(req, sock, addr, listener_name, self.cfg)
            environ["wsgi.input"] = io.BytesIO()
            return preflight(WSGIRequest(environ))
        except Exception:
            # The application decides again, and answers whatever this could not.
            self.log.exception("could not decide a request's body allowance before reading it")
            return NO_BODY
        finally:
            req._expected_100_continue = expected_100_continue
            close_old_connections()

    def _read_body(self, req: Any, sock: Any) -> bool:
        """Read the body ahead within WEB_BODY_TIMEOUT; False when there is nothing to answer.

        That is when it did not come (a 408 sent) or the client went away before sending all
        it announced.
        """
        announced = getattr(req.body.reader, "length", None)  # None: chunked
        if announced == 0:
            return True
        limit = req.body_allowance
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
            # Not logged: a flood of slow clients would be a line each.
            answer = error_answer(408, "Request Timeout", "body", message, sent_request_id(req))
            self._send(sock, answer)
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
                request_id = sent_request_id(req)
                self.log.warning(
                    "Invalid request from ip=%s: %s [request_id=%s]", (addr or ("",))[0], exc, request_id
                )
                self._send(client, error_answer(status, reason, field, _message(status, exc), request_id))
                return
        super().handle_error(req, client, addr, exc)

    def _send(self, sock: Any, answer: bytes) -> None:
        try:
            sock.sendall(answer)
        except OSError:
            self.log.debug("could not send the refusal")


def _linger(sock: Any) -> None:
    """After answering a request whose body was left unread, let the client see the answer.

    Say we are done writing, then discard what it still sends for a moment: a client that
    writes its whole body before reading would otherwise meet a reset, not the answer.
    """
    try:
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(LINGER_SECONDS)
        deadline = time.monotonic() + LINGER_SECONDS
        discarded = 0
        while discarded < LINGER_BYTES and time.monotonic() < deadline:
            chunk = sock.recv(READ_CHUNK)
            if not chunk:
                break
            discarded += len(chunk)
    except OSError:
        pass


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
