"""Watching Atlaso run: request ids, logs, metrics, readiness and traces.

As operations.md, "Watching it run", asks.

- `context`: the request id of the work in hand (a request, or the job it started);
- `logs`: the log lines' request id and the two formats (text, and JSON for a pipeline);
- `metrics`: the Prometheus series every process writes (prometheus-client, multiprocess under
  gunicorn and Celery); `exposition`: `/metrics`, with the figures read from the database;
- `health`: `/healthz`, `/readyz`, and the heartbeats of the worker and beat they read;
- `middleware`: the one middleware that gives every response its `X-Request-ID`, counts and
  times it, and logs it;
- `tasks`: the same for Celery (the id carried in the message, the worker's heartbeat);
- `login_failures`: failed logins, counted;
- `tracing`: OpenTelemetry, imported only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set;
- `gunicorn_conf`: the web server's hooks (the metrics folder, dead workers, JSON logs);
- `exporter`: the figures of a machine with Celery workers and no web process.

`context`, `logs`, `metrics`, `gunicorn_conf` and `exporter` import no Django and no app
(pyproject's import contract `observability-bare`): gunicorn's master and the job-run record
use them.
"""
