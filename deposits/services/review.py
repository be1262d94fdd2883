"""The review desk's writes: Resolve, claims (take, renew, pass on, release), Skip and Undo.

A claim says who is on a conflict; it is advisory for reading and binding for Resolve: a bag
held by another reviewer is not resolved until its claim expires or is taken over. Claims are
taken in one conditional write each (deposits.sql.claims), never read and then written.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from atlaso_site.lib.errors import CONFLICT, AtlasoError, invalid, not_found
from beliefs.models import HUMAN_REVIEW_CHANNEL
from deposits.domain.review import held_message, resolution_correction
from deposits.domain.types import DIRECTIONAL, FACETS
from deposits.domain.validation import validate_content, validate_reason, validate_user_id
from deposits.models import (
    ConflictEpisode,
    Deposit,
    Resolution,
    ResolutionKept,
    ReviewClaim,
    ReviewSkip,
    ScopeBag,
)
from deposits.selectors.bags import stats_of
from deposits.services.deposits import AddResult, deposit_contradict, deposit_retract
from deposits.sql import claims as sql

ALREADY_RESOLVED = "already_resolved"
HELD = "held"
MAX_NOTE = 2000


def claim_span() -> timedelta:
    """How long a claim lasts without activity: ATLASO_CLAIM_MINUTES (10)."""
    return timedelta(minutes=float(settings.ATLASO_CLAIM_MINUTES))


# ---- Claims --------------------------------------------------------------------------------


def claim_next(
    *, reviewer: str, owner_prefix: str = "", now: datetime | None = None
) -> tuple[str, str] | None:
    """Claim the conflict the desk shows `reviewer`: (user_id, bag_id), or None when none is free.

    It is theirs if they hold one in the filter, else the oldest nobody holds (their skips last).
    A race lost (another reviewer claimed the same bag first) writes nothing; asking again sees
    that claim and moves on, so every answer is a bag held by `reviewer` alone.
    """
    for _attempt in range(50):
        at = now or timezone.now()
        params = {"reviewer": reviewer, "now": at, "until": at + claim_span()}
        claimed = sql.claim_one(sql.NEXT, prefix=sql.like_prefix(owner_prefix), **params)
        if claimed is not None:
            return claimed
        if not _free_conflict_left(reviewer, owner_prefix, at):
            return None
    return None


def _free_conflict_left(reviewer: str, owner_prefix: str, now: datetime) -> bool:
    """Whether an open conflict in the filter is free for `reviewer` (so a lost race is retried)."""
    taken = ReviewClaim.objects.filter(expires_at__gt=now).exclude(reviewer=reviewer).values("bag_id")
    episodes = ConflictEpisode.objects.filter(ended_at__isnull=True, user_id__startswith=owner_prefix)
    return episodes.exclude(bag_id__in=taken).exists()


def claim_bag(*, reviewer: str, user_id: str, bag_id: str, now: datetime | None = None) -> bool:
    """Claim one bag in conflict if nobody else holds it (renewing one's own); whether it is now held."""
    at = now or timezone.now()
    params = {"reviewer": reviewer, "now": at, "until": at + claim_span()}
    return sql.claim_one(sql.ONE, user_id=user_id, bag_id=bag_id, **params) is not None


def claim_take_over(*, reviewer: str, user_id: str, bag_id: str, now: datetime | None = None) -> str | None:
    """Take over a bag's claim whoever holds it; the reviewer it was taken from (None if nobody).

    Refused when the bag is no longer in conflict: there is nothing left to be on.
    """
    at = now or timezone.now()
    with transaction.atomic():
        before = ReviewClaim.objects.filter(bag_id=bag_id, expires_at__gt=at).values_list(
            "reviewer", flat=True
        )
        holder = next(iter(before), None)
        params = {"reviewer": reviewer, "now": at, "until": at + claim_span()}
        if sql.claim_one(sql.TAKE_OVER, user_id=user_id, bag_id=bag_id, **params) is None:
            raise AtlasoError(
                ALREADY_RESOLVED, "this bag is no longer in conflict: there is nothing to take over"
            )
    return holder if holder != reviewer else None


def claim_renew(*, reviewer: str, bag_id: str, now: datetime | None = None) -> bool:
    """Renew `reviewer`'s live claim on a bag (any action on it does); whether they held it."""
    at = now or timezone.now()
    live = ReviewClaim.objects.filter(bag_id=bag_id, reviewer=reviewer, expires_at__gt=at)
    return live.update(expires_at=at + claim_span()) == 1


def claim_release(*, bag_id: str, reviewer: str | None = None) -> None:
    """Release a bag's claim (only `reviewer`'s, when named)."""
    claims = ReviewClaim.objects.filter(bag_id=bag_id)
    if reviewer is not None:
        claims = claims.filter(reviewer=reviewer)
    claims.delete()


def claims_release_others(*, reviewer: str, owner_prefix: str, keep: str) -> int:
    """Release the reviewer's claims in the desk's filter but `keep`, the one the desk shows.

    The desk shows one conflict at a time, so holding others would only keep them from others.
    """
    claims = ReviewClaim.objects.filter(reviewer=reviewer, user_id__startswith=owner_prefix).exclude(
        bag_id=keep
    )
    return claims.delete()[0]


def taken_from(*, reviewer: str) -> list[ReviewClaim]:
    """The claims taken over from `reviewer` since their last page; telling them clears the mark."""
    claims = list(ReviewClaim.objects.filter(taken_from=reviewer).order_by("claimed_at"))
    if claims:
        ReviewClaim.objects.filter(pk__in=[c.pk for c in claims], taken_from=reviewer).update(taken_from=None)
    return claims


def _refuse_if_held(bag_id: str, reviewer: str, now: datetime) -> None:
    holder = ReviewClaim.objects.filter(bag_id=bag_id, expires_at__gt=now).exclude(reviewer=reviewer).first()
    if holder is not None:
        raise AtlasoError(
            HELD,
            f"{held_message(holder.reviewer, holder.expires_at, now)}: take it over first to resolve it",
            holder=holder.reviewer,
        )


# ---- Skip ----------------------------------------------------------------------------------


def conflict_skip(
    *, reviewer: str, user_id: str, bag_id: str, note: str = "", now: datetime | None = None
) -> None:
    """Put a conflict behind every other for `reviewer` (not for others) and release their claim."""
    at = now or timezone.now()
    note = note.strip()
    if len(note) > MAX_NOTE:
        raise invalid("note", f"a note is at most {MAX_NOTE} characters")
    bag = ScopeBag.objects.filter(user_id=user_id, id=bag_id).first()
    if bag is None:
        raise not_found(f"no bag {bag_id!r} for user {user_id!r}")
    with transaction.atomic():
        ReviewSkip.objects.update_or_create(
            reviewer=reviewer, bag=bag, defaults={"user_id": user_id, "note": note, "skipped_at": at}
        )
        claim_release(bag_id=bag_id, reviewer=reviewer)


def skip_return(*, reviewer: str, user_id: str, bag_id: str, now: datetime | None = None) -> bool:
    """Back to a skipped conflict: the skip is forgotten and the bag claimed; whether it is held now.

    False when another reviewer holds it meanwhile (the skip is forgotten all the same).
    """
    with transaction.atomic():
        ReviewSkip.objects.filter(reviewer=reviewer, bag_id=bag_id).delete()
        return claim_bag(reviewer=reviewer, user_id=user_id, bag_id=bag_id, now=now)


# ---- Resolve and Undo ----------------------------------------------------------------------


def bag_resolve(
    *,
    user_id: str,
    bag_id: str,
    keep: Sequence[str] = (),
    side: str | None = None,
    reason: str,
    holds: str = "",
    reviewer: str,
) -> AddResult:
    """A reviewer settles a bag in conflict with one `human_review` deposit and its Resolution record.

    In one transaction, the deposit keeps `keep` (or, with `side`, every live deposit of that
    polarity) and contradicts every other live directional deposit of the bag.

    Its content is the claim that holds, what recall returns from then on: `holds` as the
    reviewer put it, or else the kept deposits' contents; `reason` (why) goes on its edges, so a
    justification is never recalled as a claim. It copies the kept deposits' polarity, best
    grade, scope and artifacts, so it passes the gate whenever they did. Kept deposits that
    disagree, a bag no longer in conflict (someone resolved it first) or one another reviewer
    holds raise and write nothing. The bag's claim and every reviewer's skip of it go with the
    conflict.
    """
    validate_user_id(user_id)
    reason = validate_reason(reason)
    stated = validate_content(holds, field="holds") if holds.strip() else None
    if side is not None and side not in DIRECTIONAL:
        raise invalid("side", f"side must be one of {', '.join(DIRECTIONAL)}")
    with transaction.atomic():
        now = timezone.now()
        # Every write takes deposit locks before bag rows (see services.deposits._lock_targets):
        # the bag's live directional deposits first, in id order, so an agent correcting one of
        # them meanwhile waits for this resolution (or it for the agent) and never deadlocks with
        # it. Then the bag row: two reviewers resolving one bag run one after the other.
        list(
            Deposit.objects.filter(user_id=user_id, bag_id=bag_id)
            .live()
            .directional()
            .select_for_update(no_key=True)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        bag = ScopeBag.objects.select_for_update().filter(user_id=user_id, id=bag_id).first()
        if bag is None:
            raise not_found(f"no bag {bag_id!r} for user {user_id!r}")
        if not stats_of(bag).has_disagreement:
            raise AtlasoError(
                ALREADY_RESOLVED, "this bag is no longer in conflict: it was resolved meanwhile"
            )
        _refuse_if_held(bag_id, reviewer, now)
        live = list(
            Deposit.objects.filter(user_id=user_id, bag_id=bag_id).live().directional().order_by("created_at")
        )
        kept = _kept(live, keep, side)
        overruled = [str(d.pk) for d in live if d not in kept]
        correction = resolution_correction(
            user_id=user_id,
            facets={facet: getattr(bag, facet) for facet in FACETS},
            kept=kept,
            overruled=overruled,
            stated=stated,
            reason=reason,
            reviewer=reviewer,
        )
        result = deposit_contradict(correction=correction, channel=HUMAN_REVIEW_CHANNEL)
        resolution = Resolution.objects.create(
            deposit_id=result.deposit.id,
            user_id=user_id,
            bag=bag,
            reviewer=reviewer,
            side=kept[0].polarity,
            kept=len(kept),
            superseded=len(overruled),
            created_at=result.deposit.created_at,
        )
        # What its artifact refs were copied from: erasing one of these takes its refs back.
        ResolutionKept.objects.bulk_create(
            ResolutionKept(resolution=resolution, deposit=deposit, user_id=user_id) for deposit in kept
        )
        ReviewClaim.objects.filter(bag_id=bag_id).delete()
        ReviewSkip.objects.filter(bag_id=bag_id).delete()
        return result


def _kept(live: list[Deposit], keep: Sequence[str], side: str | None) -> list[Deposit]:
    """The live deposits that hold: the ticked ones, or every one of `side`; all of one polarity."""
    if side is not None:
        return _of_side(live, side)
    wanted = set(keep)
    kept = [d for d in live if str(d.pk) in wanted]
    if not kept:
        raise invalid("keep", "tick at least one live deposit of this bag to keep")
    if len(kept) < len(wanted):
        raise AtlasoError(
            ALREADY_RESOLVED, "a deposit you chose to keep is no longer live: the bag changed meanwhile"
        )
    sides = sorted({d.polarity for d in kept})
    if len(sides) > 1:
        raise invalid(
            "keep", f"the deposits you kept disagree ({', '.join(sides)}); keep deposits of one polarity"
        )
    return kept


def _of_side(live: list[Deposit], side: str) -> list[Deposit]:
    """Every live deposit of `side`, the side a reviewer said holds; refused when none is left."""
    kept = [d for d in live if d.polarity == side]
    if not kept:
        raise AtlasoError(
            ALREADY_RESOLVED, f"this bag holds no live {side} deposit any more: it changed meanwhile"
        )
    return kept


def resolution_undo(*, user_id: str, deposit_id: str, reviewer: str) -> Resolution:
    """Undo a resolution: soft-retract its deposit (reason "undone by <reviewer>").

    What it superseded is live again and the bag is back in conflict, its episode reopened; the
    bag's claim is released. Refused when it was undone (or its deposit retracted) already.
    """
    with transaction.atomic():
        resolution = (
            Resolution.objects.select_for_update()
            .select_related("deposit")
            .filter(user_id=user_id, deposit_id=deposit_id)
            .first()
        )
        if resolution is None:
            raise not_found(f"no resolution {deposit_id!r} for user {user_id!r}")
        if resolution.deposit.retracted_at is not None:
            by = f"undone by {resolution.undone_by}" if resolution.undone_by else "its deposit was retracted"
            raise AtlasoError(CONFLICT, f"this resolution is undone already ({by})")
        deposit_retract(user_id=user_id, deposit_id=deposit_id, mode="soft", reason=f"undone by {reviewer}")
        resolution.undone_by = reviewer
        resolution.undone_at = timezone.now()
        resolution.save(update_fields=["undone_by", "undone_at"])
        claim_release(bag_id=resolution.bag_id)
    return resolution


__all__ = [
    "ALREADY_RESOLVED",
    "HELD",
    "bag_resolve",
    "claim_bag",
    "claim_next",
    "claim_release",
    "claim_renew",
    "claim_span",
    "claim_take_over",
    "claims_release_others",
    "conflict_skip",
    "resolution_undo",
    "skip_return",
    "taken_from",
]
