"""OpenTelemetry traces, on only when OpenTelemetry's own variables ask for them.

`OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set: every process
(web, worker, beat, commands) sends its spans over OTLP/HTTP with protobuf: Django's requests,
psycopg's queries, Celery's tasks (a task's span is the child of the request's span that sent
it, through the message) and httpx's calls. The other standard variables apply as the SDK
reads them (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`,
`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_BSP_*`, `OTEL_PYTHON_DJANGO_EXCLUDED_URLS`, …).

Unset, `start` is never called: nothing of OpenTelemetry is imported, and nothing is measured
(`wanted` is the check, made in `atlaso_site.apps`; this module imports OpenTelemetry only
inside `start`).
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
PROTOCOL = "http/protobuf"
DEFAULT_SERVICE_NAME = "atlaso"


def wanted(environ: os._Environ[str] | dict[str, str] = os.environ) -> bool:
    """Tracing is asked for: an OTLP endpoint is named, and the SDK is not switched off."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(environ.get(name) for name in ENDPOINT_VARIABLES)


def start() -> None:
    """Send this process's spans to the OTLP endpoint and instrument Django, psycopg, Celery and httpx.

    Call once, before Django loads its middleware.
    """
    for name in ("OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"):
        protocol = os.environ.get(name)
        if protocol and protocol != PROTOCOL:
            raise ImproperlyConfigured(f"{name}={protocol!r}: Atlaso sends traces over {PROTOCOL} only")

    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    service = os.environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service}))
    # Batched, so a request never waits for the collector (the SDK's processor starts again
    # in a forked Celery pool process).
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    DjangoInstrumentor().instrument(tracer_provider=provider)
    PsycopgInstrumentor().instrument(tracer_provider=provider, skip_dep_check=True)
    CeleryInstrumentor().instrument(tracer_provider=provider)
    HTTPXClientInstrumentor().instrument(tracer_provider=provider)
