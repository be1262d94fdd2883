"""domain.md, Live: a retracted correction no longer supersedes.

Retracting it revives what it corrected (unless another live correction still supersedes it), and
the bag counts, the flags recall shows, the conflict episodes and the API's audit fields follow in
the same transaction.
"""

from __future__ import annotations

import pytest

from deposits.models import ConflictEpisode, Deposit, ScopeBag
from deposits.selectors.deposits import deposit_detail
from deposits.selectors.recall import recall
from tests.deposits.scenario import NARROW as SCOPE
from tests.deposits.scenario import correct, put, retract

pytestmark = pytest.mark.django_db


def split_and_corrected() -> tuple[str, str, str]:
    """A bag where `positive` and `negative` disagreed until `fix` superseded `negative`."""
    positive = put("positive", "marker works at 0.7", SCOPE)
    negative = put("negative", "marker fails at 0.7", SCOPE)
    fix = correct([negative], "marker works at 0.7 after all")
    return positive, negative, fix


def bag_of(deposit_id: str) -> ScopeBag:
    return ScopeBag.objects.get(id=Deposit.objects.get(pk=deposit_id).bag_id)


def test_retracting_a_correction_revives_what_it_corrected_and_reopens_the_conflict():
    positive, negative, fix = split_and_corrected()
    bag = bag_of(negative)
    assert (bag.live_positive, bag.live_negative) == (2, 0) and not ScopeBag.objects.in_conflict().exists()
    closed = ConflictEpisode.objects.get(bag_id=bag.id)
    assert closed.ended_at is not None

    retract(fix)

    bag.refresh_from_db()
    assert (bag.live_positive, bag.live_negative) == (1, 1)
    assert ScopeBag.objects.in_conflict().filter(id=bag.id).exists()
    assert deposit_detail(user_id="alice", deposit_id=negative).superseded_by == ()
    assert Deposit.objects.live().filter(pk=negative).exists()
    episodes = ConflictEpisode.objects.filter(bag_id=bag.id).order_by("started_at")
    assert [e.ended_at is None for e in episodes] == [False, True]
    hits = {hit.id: hit for hit in recall(user_id="alice", query="marker", limit=10)}
    assert negative in hits and hits[negative].has_disagreement and hits[positive].has_disagreement


def test_a_deposit_another_live_correction_still_supersedes_stays_superseded():
    _positive, negative, fix = split_and_corrected()
    second = correct([negative], "marker works at 0.7, measured again")

    retract(fix)

    bag = bag_of(negative)
    assert bag.live_negative == 0 and not ScopeBag.objects.in_conflict().filter(id=bag.id).exists()
    assert deposit_detail(user_id="alice", deposit_id=negative).superseded_by == (second,)
    assert negative not in {hit.id for hit in recall(user_id="alice", query="marker", limit=10)}


def test_the_retracted_correction_keeps_its_edge_for_audit():
    _positive, negative, fix = split_and_corrected()

    retract(fix)

    corrected = deposit_detail(user_id="alice", deposit_id=fix)
    assert corrected.contradicts == (negative,) and corrected.retracted
