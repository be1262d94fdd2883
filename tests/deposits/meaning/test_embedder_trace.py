"""The embedder's HTTP call, made on another thread, traced as a child of the recall that asked."""

from __future__ import annotations

import pytest
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from deposits.embedders import OpenAIEmbedder, QueryVector
from tests.deposits.meaning.conftest import needs_local_model
from tests.deposits.meaning.endpoint import FakeEmbeddings

pytestmark = needs_local_model


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    HTTPXClientInstrumentor().instrument(tracer_provider=provider)
    try:
        yield provider.get_tracer("test"), exporter
    finally:
        HTTPXClientInstrumentor().uninstrument()


def test_the_query_embedding_is_a_span_inside_the_recall_that_asked_for_it(spans):
    tracer, exporter = spans
    server = FakeEmbeddings()
    try:
        embedder = OpenAIEmbedder(url=server.url, model="e5-trace", key="", timeout=5, query_timeout=5)
        with tracer.start_as_current_span("GET api/v1/users/<user_id>/recall") as recall:
            vector = QueryVector(embedder, "what does she eat, asked once for the trace test").result()
    finally:
        server.down()
    assert vector.shape == (384,)
    (call,) = [
        s
        for s in exporter.get_finished_spans()
        if s.attributes.get("http.request.method", s.attributes.get("http.method")) == "POST"
    ]
    assert call.context.trace_id == recall.get_span_context().trace_id
    assert call.parent is not None and call.parent.span_id == recall.get_span_context().span_id
