"""OpenTelemetry only when its variables ask for it: unset, not one of its modules is loaded.

(Spans for real, sent to an OTLP receiver: tests/faults/test_watching.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SERVE_A_REQUEST = """
import json, sys
import django
django.setup()
from django.test import Client
assert Client().get("/healthz").status_code == 200
assert Client().get("/api/v1/tiers").status_code == 401
import atlaso_site.celery, atlaso_site.wsgi
print(json.dumps(sorted(name for name in sys.modules if name.startswith("opentelemetry"))))
"""


def loaded_modules(**env: str) -> list[str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", SERVE_A_REQUEST],
        cwd=ROOT,
        env={
            **inherited,
            "DJANGO_SETTINGS_MODULE": "atlaso_site.settings",
            "ALLOWED_HOSTS": "testserver",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_without_an_otlp_endpoint_nothing_of_opentelemetry_is_imported():
    assert loaded_modules() == []


def test_with_an_endpoint_the_exporter_and_the_instrumentations_are_loaded():
    loaded = set(
        loaded_modules(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", OTEL_TRACES_SAMPLER="always_off")
    )
    assert "opentelemetry.exporter.otlp.proto.http.trace_exporter" in loaded
    assert {
        "opentelemetry.instrumentation.django",
        "opentelemetry.instrumentation.psycopg",
        "opentelemetry.instrumentation.celery",
        "opentelemetry.instrumentation.httpx",
    } <= loaded


def test_switched_off_by_the_sdks_own_variable_nothing_is_loaded_either():
    assert loaded_modules(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", OTEL_SDK_DISABLED="true") == []
