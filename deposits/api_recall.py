"""Recall and scope bags in API v1."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router, Status

from atlaso_site.access.api_keys import READ
from atlaso_site.wire import UserId, with_errors
from deposits.schemas import BagDetailOut, BagId, BagPageOut, BagQuery, RecallQuery, SearchResultsOut
from deposits.selectors import bags
from deposits.selectors.recall import recall
from deposits.services import deposits as services

router = Router(tags=["recall"])


@router.get("/users/{user_id}/recall", response=with_errors(**{"200": SearchResultsOut}), auth=READ)
def recall_deposits(request: HttpRequest, user_id: UserId, query: Query[RecallQuery]):
    """Search an owner's memory: hits with their bag's flags, and flags over every matching bag."""
    results = recall(
        user_id=user_id,
        query=query.q,
        facets=query.facets(),
        limit=query.limit,
        include_superseded=query.include_superseded,
        mode=query.mode,
    )
    services.recall_record(user_id=user_id, results=results)
    # The ranking that answered, for the recall duration's `mode` label (observability.middleware):
    # a recall that fell back to words is timed as words.
    request.recall_mode = "hybrid" if len(results.modes) > 1 else results.modes[0]  # type: ignore[attr-defined]
    return Status(200, results)


@router.get("/users/{user_id}/bags", response=with_errors(**{"200": BagPageOut}), auth=READ)
def list_bags(request: HttpRequest, user_id: UserId, query: Query[BagQuery]):
    """An owner's scope bags with live statistics; `conflict=true` lists only disagreeing ones."""
    page = bags.bag_page(
        user_id=user_id,
        conflict=query.conflict,
        facets=query.facets(),
        limit=query.limit,
        offset=query.offset,
    )
    return Status(200, page)


@router.get("/users/{user_id}/bags/{bag_id}", response=with_errors(404, **{"200": BagDetailOut}), auth=READ)
def get_bag(request: HttpRequest, user_id: UserId, bag_id: BagId):
    """One bag with its deposits, live and superseded, marked."""
    return Status(200, bags.bag_detail(user_id=user_id, bag_id=bag_id))
