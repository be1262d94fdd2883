"""Schemathesis hooks for .ci/schemathesis: which 422s a schema-valid request may get.

The OpenAPI document states every rule a schema can state, so positive_data_acceptance runs with
422 allowed (see schemathesis.toml) and this check narrows it again: a schema-valid request may
be refused with 422 only by a rule api.md documents and no schema can state, because it depends
on stored data, the server's clock, another field, or the request's encoded size. Any other 422
to a schema-valid request is a rule the schema fails to state, and fails the run.
"""

from __future__ import annotations

import schemathesis
from schemathesis.specs.openapi import checks as _openapi_checks

# An import's body is a stream (portability.md) under two media types schemathesis has no
# serializer for: JSON Lines go on the wire as text, gzip as the bytes drawn. Without them every
# case that draws either type is filtered out before it is sent, and the fuzzer gives up on the
# operation ("too many generated examples are filtered out") in about one run in eight.
# Like text/plain, both carry any value drawn as a valid body of their type (a list drawn as "not
# a string" goes out as its JSON text), so negative_data_rejection must not expect such a body
# refused, as it already does not for text/plain: schemathesis is pinned (.ci/schemathesis), and
# the assert makes an upgrade that moves this function fail here rather than pass unnoticed.
STREAM_MEDIA_TYPES = frozenset({"application/x-ndjson", "application/gzip"})
schemathesis.serializer.alias(["application/x-ndjson"], "text/plain")
schemathesis.serializer.alias(["application/gzip"], "application/octet-stream")
_builtin_is_stringifying = _openapi_checks._is_stringifying_media_type
assert callable(_builtin_is_stringifying)
_openapi_checks._is_stringifying_media_type = lambda media_type: (
    media_type in STREAM_MEDIA_TYPES or _builtin_is_stringifying(media_type)
)

# Codes that are never about a request's shape: the write gate, contradicting unknown ids, and
# recall by meaning asked of a server that has no embedder.
STATEFUL_CODES = frozenset({"gate_rejected", "missing_contradicts", "embedder_unavailable"})

# validation_error on a field (the last part of its dotted path) with these words in the message.
UNSTATABLE_RULES: tuple[tuple[str, str, str], ...] = (
    ("observed_at", "in the future", "a claim time is at most five minutes after the server's clock"),
    ("observed_at", "in UTC", "a claim time must exist in UTC too, e.g. not 0001-01-01T00:00:00+01:00"),
    ("taint_tier", "there is no tier", "a tier is a stored row; GET /tiers lists them"),
    ("tier", "there is no tier", "a tier is a stored row; GET /tiers lists them"),
    (
        "q",
        "holds no words",
        "a word is a letter or digit of any script, which ECMA-262 patterns cannot name portably",
    ),
    ("idempotency_key", "differ", "the Idempotency-Key header and the body's idempotency_key must agree"),
    ("", "the query string is", "the whole query string is at most 7 KiB as sent, percent-encoded"),
    # An import's body is a stream (portability.md): a string schema cannot state its lines.
    ("body", "the first line must be the", "an import's body starts with the atlaso_export header line"),
    ("body", "the body is empty", "an import's body starts with the atlaso_export header line"),
    ("version", "this server reads version", "an atlaso-export file of another version"),
    ("body", "gzip", "a body that starts as gzip must be gzip, whole"),
    ("body", "mem0 export", "a mem0 export is one JSON document of memories"),
    ("confirm", "cannot be undone", "forgetting an owner takes its user_id typed again in confirm"),
)


def _documented_refusal(error: dict) -> bool:
    code, message = error.get("code"), str(error.get("message", ""))
    if code in STATEFUL_CODES:
        return True
    leaf = str(error.get("field") or "").rsplit(".", 1)[-1]
    return code == "validation_error" and any(
        (not field or leaf == field) and words in message for field, words, _why in UNSTATABLE_RULES
    )


@schemathesis.check
def positive_data_refused_only_by_unstatable_rules(ctx, response, case):
    """A schema-valid request answered 422 names a rule in UNSTATABLE_RULES, or the gate."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 422:
        return None
    try:
        error = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        raise AssertionError("a 422 without the error envelope") from None
    if not _documented_refusal(error):
        raise AssertionError(
            "Valid data was refused by a rule the OpenAPI document does not state: "
            f"{error.get('code')} on {error.get('field')!r}: {error.get('message')}"
        )
    return None
