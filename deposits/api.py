"""The deposits router of API v1: short operations that check access and call one service."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router, Status

from atlaso_site.access.api_keys import READ, RETRACT, WRITE, ApiKeyAuth, BodyAllowance, MiB
from atlaso_site.lib.errors import IMMUTABLE, AtlasoError
from atlaso_site.lib.idempotency import sent_idempotency_key
from atlaso_site.wire import IDEMPOTENCY_HEADER, DepositDetailOut, UserId, UuidText, with_errors
from deposits.domain.validation import MAX_BULK_ITEMS, validate_bulk, validate_correction, validate_deposit
from deposits.schemas import (
    AddManyResultOut,
    AddResultOut,
    BulkIn,
    ContradictIn,
    DepositIn,
    DepositPageOut,
    IdempotencyKey,
    ListQuery,
    RetractQuery,
    RetractResultOut,
)
from deposits.selectors import deposits as selectors
from deposits.services import deposits as services

router = Router(tags=["deposits"])

# The largest request api.md documents (settings.DATA_UPLOAD_MAX_MEMORY_SIZE says why 48 MiB);
# an item has at most 184 members (13 fields, 7 in its scope, 5 in its belief, 32 tags, 32
# artifact refs and 100 contradicted ids at their limits), so 200 an item leaves room.
BULK_BODY = BodyAllowance(bytes=48 * MiB, members=MAX_BULK_ITEMS * 200)


def _channel(request: HttpRequest) -> str:
    return request.auth.channel.name  # type: ignore[attr-defined]


@router.post(
    "/users/{user_id}/deposits",
    response=with_errors(409, 410, 411, **{"201": AddResultOut, "200": AddResultOut}),
    auth=WRITE,
)
def add_deposit(
    request: HttpRequest,
    user_id: UserId,
    payload: DepositIn,
    idempotency_key: IdempotencyKey | None = IDEMPOTENCY_HEADER,
):
    """Add one deposit. A repeat with the same idempotency key within 24 h is a replay (200)."""
    draft = validate_deposit(user_id, payload.model_dump(exclude={"idempotency_key"}))
    result = services.deposit_add(
        draft=draft,
        channel=_channel(request),
        idempotency_key=sent_idempotency_key(payload.idempotency_key, idempotency_key),
    )
    return Status(200 if result.is_idempotent_replay else 201, result)


@router.post(
    "/users/{user_id}/deposits/bulk",
    response=with_errors(411, **{"200": AddManyResultOut}),
    auth=ApiKeyAuth("write", owner=True, body=BULK_BODY),
)
def add_deposits_bulk(request: HttpRequest, user_id: UserId, payload: BulkIn):
    """Add up to 1000 deposits, each with its own idempotency key."""
    items = [item.model_dump(exclude_unset=False) for item in payload.items]
    bulk = validate_bulk(user_id, items, payload.on_gate_reject)
    result = services.deposit_add_many(bulk=bulk, channel=_channel(request))
    return Status(200, result)


@router.post(
    "/users/{user_id}/contradict",
    response=with_errors(409, 410, 411, **{"201": AddResultOut, "200": AddResultOut}),
    auth=WRITE,
)
def contradict(
    request: HttpRequest,
    user_id: UserId,
    payload: ContradictIn,
    idempotency_key: IdempotencyKey | None = IDEMPOTENCY_HEADER,
):
    """Write a correction that supersedes earlier deposits; they stay readable, now superseded."""
    correction = validate_correction(
        user_id, payload.model_dump(exclude={"idempotency_key"}, exclude_unset=True)
    )
    result = services.deposit_contradict(
        correction=correction,
        channel=_channel(request),
        idempotency_key=sent_idempotency_key(payload.idempotency_key, idempotency_key),
    )
    return Status(200 if result.is_idempotent_replay else 201, result)


@router.get(
    "/users/{user_id}/deposits/{deposit_id}",
    response=with_errors(404, **{"200": DepositDetailOut}),
    auth=READ,
)
def get_deposit(request: HttpRequest, user_id: UserId, deposit_id: UuidText):
    """One deposit with its audit state (superseded_by, retracted)."""
    return Status(200, selectors.deposit_detail(user_id, deposit_id))


@router.get("/users/{user_id}/deposits", response=with_errors(**{"200": DepositPageOut}), auth=READ)
def list_deposits(request: HttpRequest, user_id: UserId, query: Query[ListQuery]):
    """The owner's deposits, newest first."""
    page = selectors.deposit_page(
        user_id=user_id, limit=query.limit, offset=query.offset, include_retracted=query.include_retracted
    )
    return Status(200, page)


# One operation per method: OpenAPI wants each operationId unique.
@router.put(
    "/users/{user_id}/deposits/{deposit_id}",
    response=with_errors(405),
    operation_id="deposits_api_refuse_put",
    auth=WRITE,
)
@router.patch(
    "/users/{user_id}/deposits/{deposit_id}",
    response=with_errors(405),
    operation_id="deposits_api_refuse_patch",
    auth=WRITE,
)
def refuse_update(request: HttpRequest, user_id: UserId, deposit_id: UuidText):
    """Deposits are immutable: correct one by writing a deposit that contradicts it."""
    raise AtlasoError(
        IMMUTABLE,
        "deposits are immutable; to change a claim, POST /users/{user_id}/contradict with "
        f'contradicts=["{deposit_id}"] and a reason',
    )


@router.delete(
    "/users/{user_id}/deposits/{deposit_id}",
    response=with_errors(404, **{"200": RetractResultOut}),
    auth=RETRACT,
)
def retract_deposit(request: HttpRequest, user_id: UserId, deposit_id: UuidText, query: Query[RetractQuery]):
    """Soft-retract (default) or erase (mode=hard, needs the erase permission) a deposit."""
    result = services.deposit_retract(
        user_id=user_id, deposit_id=deposit_id, mode=query.mode, reason=query.reason
    )
    return Status(200, result)
