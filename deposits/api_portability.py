"""Export and import of an owner's memory in API v1 (portability.md)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router, Status

from atlaso_site.access.api_keys import READ, ApiKeyAuth, BodyAllowance, key_of
from atlaso_site.wire import UserId, with_errors
from deposits.downloads import NDJSON, export_download
from deposits.schemas_portability import ExportQuery, ImportQuery, ImportResultOut
from deposits.services.portability import owner_import

router = Router(tags=["portability"])

# An import body is read as it arrives (a batch of lines at a time), so its size bounds time,
# not memory: a 1 GB export imports in the memory a batch takes.
IMPORT_MAX_BYTES = 64 * 1024**3
IMPORT_BODY = BodyAllowance(bytes=IMPORT_MAX_BYTES, members=0, streamed=True)
_LINES = {
    "type": "string",
    "description": "atlaso-export v1: JSON Lines, one object a line, each with `kind`",
}
_IMPORT_BODY_DOC = {
    "required": True,
    "description": "An atlaso-export v1 stream (JSON Lines, or gzip of it, recognised by its first bytes "
    "whatever the Content-Type); with format=mem0, mem0's get_all export (one JSON document).",
    "content": {
        NDJSON: {"schema": _LINES},
        "application/gzip": {"schema": {"type": "string", "format": "binary"}},
        "application/json": {
            "schema": {"description": 'mem0: {"results": [memory, …]} or a list of memories'}
        },
    },
}


@router.get(
    "/users/{user_id}/export",
    response=with_errors(),
    auth=READ,
    openapi_extra={
        "responses": {"200": {"description": "The owner's memory", "content": {NDJSON: {"schema": _LINES}}}}
    },
)
def export_owner(request: HttpRequest, user_id: UserId, query: Query[ExportQuery]):
    """Every record of the owner, streamed as atlaso-export v1; a client may stop reading anywhere.

    Every deposit, edge, retraction, observation and outcome, gzipped when Accept-Encoding allows
    it.
    """
    return export_download(request, user_id, include_retracted=query.include_retracted)


@router.post(
    "/users/{user_id}/import",
    response=with_errors(411, 413, **{"200": ImportResultOut}),
    auth=ApiKeyAuth("write", owner=True, body=IMPORT_BODY),
    openapi_extra={"requestBody": _IMPORT_BODY_DOC},
)
def import_owner(request: HttpRequest, user_id: UserId, query: Query[ImportQuery]):
    """Import an atlaso-export stream (or, with format=mem0, a mem0 export) into this owner.

    Read as it arrives and written in batches, through the gate; a second run of the same body
    changes nothing, and a run cut short can be run again to finish. Lines are recorded on this
    key's channel; a key with `admin` keeps each line's own channel and tier, as exported.
    """
    key = key_of(request)
    tier = key.channel.tier
    result = owner_import(
        user_id=user_id,
        read=request.read,
        format=query.format,
        dry_run=query.dry_run,
        on_gate_reject=query.on_gate_reject,
        channel=key.channel.name,
        tier=tier.name,
        ceiling=tier.ceiling,
        keep_provenance=key.has_permission("admin"),
        limit=IMPORT_MAX_BYTES,
    )
    return Status(200, result)
