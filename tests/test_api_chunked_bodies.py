"""A chunked body is read when the server can, else 411 length_required (api.md).

The 48 MiB limit holds for it too, and it is read only after the key is checked, like any body.
"""

from __future__ import annotations

import http.client
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client, override_settings

from beliefs.services import api_key_create
from deposits.models import Deposit
from tests.client.served import ServedAtlaso

CLAIM = {"content": "Alice prefers oat milk", "tags": ["diet"]}


@pytest.fixture
def secret(db: None) -> str:
    return api_key_create(name="chunked", channel_name="agent-a", tier_name="agent_own")[1]


class Input(io.BytesIO):
    """wsgi.input as a server hands over a chunked body: decoded, ending where the body ends."""


def send_chunked(
    body: bytes, *, secret: str | None, terminated: bool = True, path: str = "/users/alice/deposits"
):
    """POST `body` as the server passes a chunked request on.

    No CONTENT_LENGTH, the decoded body on wsgi.input, and wsgi.input_terminated (gunicorn's promise
    that reading to the end is safe).
    """
    stream = Input(body)
    environ: dict[str, Any] = {
        "CONTENT_TYPE": "application/json",
        "HTTP_TRANSFER_ENCODING": "chunked",
        "wsgi.input": stream,
    }
    if terminated:
        environ["wsgi.input_terminated"] = True
    if secret:
        environ["HTTP_AUTHORIZATION"] = f"Bearer {secret}"
    response = Client().generic("POST", f"/api/v1{path}", **environ)
    assert "CONTENT_LENGTH" not in response.wsgi_request.META
    return response, stream


def test_a_chunked_body_is_read_when_the_server_says_its_input_ends(secret):
    response, _ = send_chunked(json.dumps(CLAIM).encode(), secret=secret)
    assert response.status_code == 201, response.content
    assert response.json()["deposit"]["content"] == CLAIM["content"]
    assert Deposit.objects.get().tags == ["diet"]


def test_a_chunked_observation_is_read_too(secret):
    response, _ = send_chunked(
        b'{"value": "oat"}', secret=secret, path="/users/alice/beliefs/milk/observations"
    )
    assert response.status_code == 201, response.content


def test_a_chunked_body_the_server_cannot_read_is_411_length_required_in_the_envelope(secret):
    response, stream = send_chunked(json.dumps(CLAIM).encode(), secret=secret, terminated=False)
    assert response.status_code == 411
    body = response.json()
    assert body["kind"] == "error"
    assert body["error"]["code"] == "length_required"
    assert "Content-Length" in body["error"]["message"]
    assert stream.tell() == 0
    assert not Deposit.objects.exists()


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=2048)
def test_a_chunked_body_over_the_limit_is_413_and_read_no_further_than_the_limit(secret):
    response, stream = send_chunked(json.dumps({"content": "x" * 10_000}).encode(), secret=secret)
    assert response.status_code == 413, response.content
    assert response.json()["error"] == {
        "code": "payload_too_large",
        "message": response.json()["error"]["message"],
        "limit": 2048,
        "request_id": response["X-Request-ID"],
    }
    assert stream.tell() <= 2049
    assert not Deposit.objects.exists()


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=2048)
def test_a_chunked_body_at_the_limit_is_read(secret):
    body = json.dumps({"content": ""}).encode()
    body = json.dumps({"content": "x" * (2048 - len(body))}).encode()
    assert len(body) == 2048
    assert send_chunked(body, secret=secret)[0].status_code == 201


def test_a_chunked_body_without_a_key_is_401_and_never_read(db):
    response, stream = send_chunked(json.dumps(CLAIM).encode(), secret=None)
    assert (response.status_code, response.json()["error"]["code"]) == (401, "unauthorized")
    assert stream.tell() == 0


def test_an_empty_chunked_body_is_the_usual_422_body_is_required(secret):
    response, _ = send_chunked(b"", secret=secret)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "validation_error"


def test_the_openapi_document_declares_411_on_the_writes(db):
    from atlaso_site.api import api as ninja_api

    paths = ninja_api.get_openapi_schema()["paths"]
    for path in ("/api/v1/users/{user_id}/deposits", "/api/v1/users/{user_id}/deposits/bulk",
                 "/api/v1/users/{user_id}/contradict", "/api/v1/users/{user_id}/beliefs/{key}/observations"):  # fmt: skip
        assert "411" in {str(status) for status in paths[path]["post"]["responses"]}, path


# --- Under gunicorn, as `make run` serves it -------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAtlaso]:
    server = ServedAtlaso.start(Path(tmp_path_factory.mktemp("chunked-atlaso")))
    try:
        server.make_key("chunked-rw", "read", "write")
        yield server
        assert "Traceback" not in server.log(), server.log()[-4000:]
    finally:
        server.stop()


def post_chunked(served: ServedAtlaso, path: str, parts: list[bytes]) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    try:
        headers = {"Authorization": f"Bearer {served.keys['chunked-rw']}", "Content-Type": "application/json"}
        # An iterable body with encode_chunked: Transfer-Encoding: chunked, no Content-Length.
        connection.request("POST", f"/api/v1{path}", body=iter(parts), headers=headers, encode_chunked=True)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_gunicorn_hands_over_a_chunked_body_and_the_api_reads_it(served):
    text = json.dumps({**CLAIM, "content": "Alice prefers oat milk " + "very much " * 700}).encode()
    parts = [text[i : i + 1000] for i in range(0, len(text), 1000)]
    status, body = post_chunked(served, "/users/alice/deposits", parts)
    assert status == 201, body
    assert body["deposit"]["content"].startswith("Alice prefers oat milk very much")
    status, body = post_chunked(served, "/users/alice/deposits", [b'{"cont', b'ent": "likes tea"}'])
    assert (status, body["deposit"]["content"]) == (201, "likes tea")
