"""The operators' files in docs/: the example alert rules and the Grafana dashboard.

The rules are checked and unit-tested by promtool; every dashboard query parses and names only
series /metrics exports.

(The dashboard against Grafana's own schema: docs/grafana/check-schema.sh, which needs npm.)
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from tests.ci import cannot_run

DOCS = Path(__file__).resolve().parents[1] / "docs"
RULES = DOCS / "prometheus" / "atlaso-alerts.yml"
DASHBOARD = DOCS / "grafana" / "atlaso.json"
# Grafana's own variables, as Grafana would fill them in.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "6h"}
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        cannot_run("promtool is missing: apt-get install prometheus", which="alert rules' tests")
    return found


def run(*args: str, cwd: Path) -> None:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def dashboard_queries() -> list[str]:
    queries = []
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for variable, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(variable, value)
            queries.append(expr)
    return queries


def test_the_alert_rules_pass_promtools_check_and_their_unit_tests():
    tool = promtool()
    run(tool, "check", "rules", RULES.name, cwd=RULES.parent)
    run(tool, "test", "rules", "atlaso-alerts.test.yml", cwd=RULES.parent)


def test_every_dashboard_query_is_promql_that_promtool_parses(tmp_path: Path):
    tool = promtool()
    queries = dashboard_queries()
    assert len(queries) >= 15
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [{"record": f"dashboard:q{n}", "expr": q} for n, q in enumerate(queries)],
            }
        ]
    }
    (tmp_path / "dashboard.yml").write_text(json.dumps(rules))  # JSON is YAML
    run(tool, "check", "rules", "dashboard.yml", cwd=tmp_path)


@pytest.mark.django_db
def test_every_series_the_dashboard_and_the_alerts_read_is_one_metrics_exports(settings):
    from deposits.embedders import local_available

    # The embedding backlog's series are there with an embedder only.
    settings.ATLASO_EMBEDDER = "local" if local_available() else "none"
    text = Client().get("/metrics").content.decode()
    exported = {
        family.name + suffix
        for family in text_string_to_metric_families(text)
        for suffix in SUFFIXES.get(family.type, ("",))
    }
    read = {
        name
        for text in [*dashboard_queries(), RULES.read_text()]
        for name in re.findall(r"\batlaso_[a-z_]+", text)
    }
    if not local_available():
        read = {name for name in read if not name.startswith("atlaso_embedding_")}
    assert read and read <= exported, read - exported
    assert {"atlaso_writes_total", "atlaso_job_runs_unfinished", "atlaso_readiness_check"} <= read
