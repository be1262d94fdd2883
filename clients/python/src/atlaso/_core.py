"""Settings, request building and the retry loop, as one generator that both clients drive.

`exchange()` never touches the network: it yields `Send(request)` and `Sleep(seconds)` steps
and is sent back what the send produced (an `httpx.Response`, or the `httpx.TransportError`
it raised). `Memory` drives it with `httpx.Client` and `time.sleep`, `AsyncMemory` with
`httpx.AsyncClient` and `asyncio.sleep`; the decisions (what to retry, how long to wait, which
error a failure is) are made here, once.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from atlaso._errors import (
    HOW_TO_GET_A_KEY,
    APIStatusError,
    AtlasoError,
    AuthenticationError,
    ConfigValidationError,
    ConnectError,
    RateLimitError,
    RequestTimeoutError,
    ServerError,
    error_from_response,
    retry_after_seconds,
)
from atlaso._operations import Operation

T = TypeVar("T")

VERSION = "0.2.0"
DEFAULT_BASE_URL = "http://127.0.0.1:8000"  # what `make run` serves
API_PREFIX = "/api/v1"
USER_AGENT = f"atlaso-python/{VERSION}"

INITIAL_BACKOFF = 0.5  # seconds before the first retry; doubles each time
MAX_BACKOFF = 8.0
JITTER = 0.25  # each wait is shortened by up to this share, so clients spread out
MAX_RETRY_AFTER = 60.0  # a longer Retry-After is not waited for: the error goes to the caller
SLOW_READ = 600.0  # seconds an export's or import's answer may pause (the server writes a batch)

logger = logging.getLogger("atlaso")

# Transport failures that happen before a request leaves: no connection was ever opened.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout)


@dataclass(frozen=True, slots=True)
class Settings:
    api_key: str | None
    api_key_source: str
    base_url: str
    base_url_source: str
    timeout: float
    max_retries: int
    validate_user_id: Callable[[str], object] | None

    @property
    def api_root(self) -> str:
        return self.base_url + API_PREFIX


def resolve_settings(
    *,
    api_key: str | None,
    base_url: str | None,
    timeout: float,
    max_retries: int,
    validate_user_id: Callable[[str], object] | None,
) -> Settings:
    """Arguments first, then the environment, then the defaults; nothing read but os.environ."""
    key: str | None
    if api_key is not None:
        key, key_source = api_key, "argument"
    else:
        key, key_source = os.environ.get("ATLASO_API_KEY") or None, "ATLASO_API_KEY"
    if key is not None and not key.strip():
        key = None
    if base_url is not None:
        url, url_source = base_url, "argument"
    elif os.environ.get("ATLASO_BASE_URL"):
        url, url_source = os.environ["ATLASO_BASE_URL"], "ATLASO_BASE_URL"
    else:
        url, url_source = DEFAULT_BASE_URL, "default"
    url = url.strip().rstrip("/")
    if url.endswith(API_PREFIX):
        url = url[: -len(API_PREFIX)]
    if not url.startswith(("http://", "https://")):
        raise ConfigValidationError(
            f"base_url must start with http:// or https://, got {url!r} (from {url_source})"
        )
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ConfigValidationError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ConfigValidationError(f"max_retries must be a whole number ≥ 0, got {max_retries!r}")
    if validate_user_id is not None and not callable(validate_user_id):
        raise ConfigValidationError("validate_user_id must be a callable that raises on a bad user_id")
    return Settings(
        api_key=key,
        api_key_source=key_source,
        base_url=url,
        base_url_source=url_source,
        timeout=float(timeout),
        max_retries=max_retries,
        validate_user_id=validate_user_id,
    )


@dataclass(frozen=True, slots=True)
class Send:
    request: httpx.Request
    # The answer is read as it arrives (an export): the caller reads it, and closes it.
    stream: bool = False


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


Step = Send | Sleep
Reply = httpx.Response | httpx.TransportError | None


def build_request(settings: Settings, operation: Operation[Any]) -> httpx.Request:
    headers = {
        "Authorization": f"Bearer {settings.api_key}",
        "Accept": "application/json",
        "User-Agent": USER_AGENT,
    }
    if operation.idempotency_key is not None:
        headers["Idempotency-Key"] = operation.idempotency_key
    headers.update(operation.headers or {})
    params = {k: v for k, v in (operation.params or {}).items() if v is not None}
    extensions = {}
    if operation.slow:
        # A transfer of a whole memory: its answer may come only after the last byte is written
        # (an import's), or its pieces with the server's reads between them (an export's).
        extensions["timeout"] = httpx.Timeout(
            settings.timeout, read=max(settings.timeout, SLOW_READ)
        ).as_dict()
    return httpx.Request(
        operation.method,
        settings.api_root + operation.path,
        params=params or None,
        json=operation.body if operation.content is None else None,
        content=None if operation.content is None else operation.content(),
        headers=headers,
        extensions=extensions,
    )


def backoff(attempt: int, rng: Callable[[], float]) -> float:
    """The wait before retry number `attempt + 1`: exponential, capped, with jitter."""
    return min(INITIAL_BACKOFF * 2.0**attempt, MAX_BACKOFF) * (1 - JITTER * rng())


def retry_delay(
    error: AtlasoError,
    *,
    attempt: int,
    settings: Settings,
    operation: Operation[Any],
    rng: Callable[[], float],
    sent: bool = True,
) -> float | None:
    """How long to wait before sending again, or None when this failure is final.

    A call that is not safe to send twice is still retried when it was never sent: the
    connection could not be opened.
    """
    if attempt >= settings.max_retries:
        return None
    if not operation.retry_safe and sent:
        return None
    if isinstance(error, (ConnectError, RequestTimeoutError)):
        return backoff(attempt, rng)
    if isinstance(error, (RateLimitError, ServerError)):
        response = error.response
        wait = retry_after_seconds(response.headers.get("retry-after") if response is not None else None)
        if wait is None:
            return backoff(attempt, rng)
        return wait if wait <= MAX_RETRY_AFTER else None
    return None


def _transport_error(exc: httpx.TransportError, request: httpx.Request) -> AtlasoError:
    where = f"{request.method} {request.url.copy_with(query=None)}"
    if isinstance(exc, httpx.TimeoutException):
        return RequestTimeoutError(f"no answer from {where} within the timeout ({type(exc).__name__})")
    return ConnectError(f"could not reach {where}: {exc or type(exc).__name__}. Is the server running?")


def _read(operation: Operation[T], response: httpx.Response) -> T:
    """The parsed answer; one that is not the API's (a proxy's page, a cut body) is an APIStatusError."""
    if operation.stream:
        return operation.parse(response)
    try:
        return operation.parse(response.json())
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise APIStatusError(
            f"the answer to {operation.method} {operation.path} ({response.status_code}) is not one this "
            f"client can read ({type(error).__name__}: {error}); is ATLASO_BASE_URL an Atlaso server?",
            status_code=response.status_code,
            response=response,
        ) from error


def exchange(
    settings: Settings, operation: Operation[T], *, rng: Callable[[], float] = random.random
) -> Generator[Step, Reply, T]:
    """Send `operation` until it succeeds or fails for good; return its parsed answer."""
    if operation.user_id is not None and settings.validate_user_id is not None:
        settings.validate_user_id(operation.user_id)
    if settings.api_key is None:
        raise AuthenticationError(HOW_TO_GET_A_KEY)
    request = build_request(settings, operation)
    attempt = 0
    while True:
        if attempt and operation.content is not None:
            # A body read from a file is read again from its start for each attempt.
            request = build_request(settings, operation)
        reply = yield Send(request, stream=operation.stream)
        cause: BaseException | None = None
        if isinstance(reply, httpx.TransportError):
            error, cause = _transport_error(reply, request), reply
        elif isinstance(reply, httpx.Response) and reply.is_success:
            return _read(operation, reply)
        elif isinstance(reply, httpx.Response):
            error = error_from_response(reply)
        else:
            raise TypeError(f"exchange was sent {reply!r}, not a response or a transport error")
        delay = retry_delay(
            error,
            attempt=attempt,
            settings=settings,
            operation=operation,
            rng=rng,
            sent=not isinstance(cause, NOT_SENT),
        )
        if delay is None:
            raise error from cause
        attempt += 1
        logger.info(
            "retrying %s %s in %.2f s (retry %d of %d): %s",
            request.method,
            operation.path,
            delay,
            attempt,
            settings.max_retries,
            error.message,
        )
        yield Sleep(delay)
