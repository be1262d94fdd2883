"""Forgetting an owner in API v1 (portability.md): DELETE /users/{user_id}."""

from __future__ import annotations

from typing import Annotated, Literal

from django.http import HttpRequest
from ninja import Query, Router, Schema, Status
from pydantic import Field

from atlaso_site.access.api_keys import ApiKeyAuth
from atlaso_site.lib.errors import invalid
from atlaso_site.wire import NO_NUL, OutSchema, UserId, with_errors
from diagnostics.forget import owner_forget

router = Router(tags=["portability"])


class ForgetQuery(Schema):
    confirm: Annotated[str, Field(description="The user_id again: forgetting cannot be undone.")] = Field(
        ..., pattern=NO_NUL
    )


class ForgetResultOut(OutSchema):
    kind: Literal["forget_result"]
    user_id: str
    deposits: int
    edges: int
    observations: int
    beliefs: int
    keys_tombstoned: int


@router.delete(
    "/users/{user_id}",
    response=with_errors(**{"200": ForgetResultOut}),
    auth=ApiKeyAuth("erase", owner=True),
)
def forget_owner(request: HttpRequest, user_id: UserId, query: Query[ForgetQuery]):
    """Forget the owner whole, in one transaction.

    Every deposit, edge, bag, belief, observation, outcome, snapshot and recall of it; its
    idempotency keys answer 410 `erased` for the rest of their 24 hours. Needs the erase permission
    and `confirm` = the user_id.
    """
    if query.confirm != user_id:
        raise invalid(
            "confirm", "forgetting an owner cannot be undone: send confirm=<the user_id> to say you mean it"
        )
    return Status(200, owner_forget(user_id=user_id))
