"""The desk's next conflict, found in three index walks, is the one its order names.

The asker's live claim (the one taken last), then the oldest conflict nobody holds, then the asker's
skips in the order skipped. Checked against that order spelled in Python over random desks: open and
ended conflicts with tied start times, live and expired claims of the asker and others, skips of
both, an owner filter.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deposits.models import ConflictEpisode, ReviewClaim, ReviewSkip, ScopeBag
from deposits.sql import claims as sql

pytestmark = pytest.mark.django_db(transaction=False)

ME, OTHER = "rita", "remy"
OWNERS = ("ann", "anna", "bob")

# One conflict bag: owner, open?, start (minutes ago, ties likely), claim (None or (reviewer,
# minutes ago claimed, expired?)), skips (each (reviewer, minutes ago)).
bags = st.lists(
    st.tuples(
        st.sampled_from(OWNERS),
        st.booleans(),
        st.integers(0, 3),
        st.none() | st.tuples(st.sampled_from((ME, OTHER)), st.integers(1, 4), st.booleans()),
        st.lists(
            st.tuples(st.sampled_from((ME, OTHER)), st.integers(1, 4)), max_size=2, unique_by=lambda s: s[0]
        ),
    ),
    min_size=1,
    max_size=9,
)


def _expected(rows, prefix: str, now):
    """The desk's order, as claims.py's comment states it, over the rows as written."""
    free = []
    for created, (bag_id, owner, is_open, started, claim, skips) in enumerate(rows):
        if not is_open or not owner.startswith(prefix):
            continue
        mine_live = claim is not None and claim[0] == ME and not claim[2]
        if claim is not None and not claim[2] and not mine_live:
            continue  # someone else holds it
        skipped = dict(skips).get(ME)
        free.append(
            (
                0 if mine_live else 1,
                claim[1] if mine_live else 0,  # minutes ago: the one taken last first
                skipped is not None,
                -(skipped or 0),  # minutes ago: the one skipped first first
                -started,  # tens of minutes ago: the oldest first
                created,  # the episode's id
                owner,
                bag_id,
            )
        )
    if not free:
        return None
    best = min(free)
    return best[-2], best[-1]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(desk=bags, prefix=st.sampled_from(("", "ann", "b")))
def test_the_three_walks_hand_out_the_conflict_the_desks_order_names(desk, prefix, db):
    now = timezone.now().replace(microsecond=0)
    minutes = lambda n: now - timedelta(minutes=n)  # noqa: E731
    rows = []
    with transaction.atomic():
        for i, (owner, is_open, started, claim, skips) in enumerate(desk):
            bag_id = f"bag_{uuid.uuid4().hex[:8]}{i:02d}"
            ScopeBag.objects.create(id=bag_id, user_id=owner, created_at=now, updated_at=now)
            ConflictEpisode.objects.create(
                user_id=owner,
                bag_id=bag_id,
                started_at=minutes(10 * started + 10),
                ended_at=None if is_open else now,
            )
            if claim is not None:
                reviewer, ago, expired = claim
                ReviewClaim.objects.create(
                    bag_id=bag_id, user_id=owner, reviewer=reviewer, claimed_at=minutes(ago),
                    expires_at=minutes(1) if expired else now + timedelta(minutes=10 - ago),
                )  # fmt: skip
            for reviewer, ago in skips:
                ReviewSkip.objects.create(
                    bag_id=bag_id, user_id=owner, reviewer=reviewer, skipped_at=minutes(ago)
                )
            rows.append((bag_id, owner, is_open, started, claim, skips))
        got = sql.claim_one(
            sql.NEXT, reviewer=ME, prefix=sql.like_prefix(prefix), now=now, until=now + timedelta(minutes=10)
        )
        assert got == _expected(rows, prefix, now)
        transaction.set_rollback(True)
