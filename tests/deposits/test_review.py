"""The review desk's rules, through its services: claims, Skip, Take over, Resolve and Undo."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from atlaso_site.lib.errors import AtlasoError
from deposits.models import ConflictEpisode, Deposit, Resolution, ReviewClaim
from deposits.selectors.bags import conflict_queue
from deposits.selectors.review import claim_on, conflict_since, desk_progress, resolution_page, skipped_by
from deposits.services.deposits import deposit_retract
from deposits.services.review import (
    ALREADY_RESOLVED,
    HELD,
    bag_resolve,
    claim_bag,
    claim_next,
    claim_release,
    claim_renew,
    claim_take_over,
    conflict_skip,
    resolution_undo,
    skip_return,
    taken_from,
)
from tests.deposits.dashboard import NARROW, split, write

pytestmark = pytest.mark.django_db


def queue(*owners: str, days_ago: int = 3):
    """One conflict per owner, the first the oldest."""
    now = timezone.now()
    return [split(owner, "prod", at=now - timedelta(days=days_ago - i)) for i, owner in enumerate(owners)]


def live(user_id: str, bag_id: str) -> set[str]:
    return {
        str(pk)
        for pk in Deposit.objects.filter(user_id=user_id, bag_id=bag_id).live().values_list("pk", flat=True)
    }


# ---- Claims --------------------------------------------------------------------------------


def test_two_reviewers_get_the_two_oldest_conflicts_and_each_keeps_theirs():
    a, b, _c = queue("alice", "bob", "carol")
    assert claim_next(reviewer="rita") == ("alice", a.bag_id)
    assert claim_next(reviewer="remy") == ("bob", b.bag_id)
    # Asking again hands each the conflict they hold, not the next free one.
    assert claim_next(reviewer="rita") == ("alice", a.bag_id)
    assert claim_next(reviewer="remy") == ("bob", b.bag_id)


def test_the_owner_filter_hands_out_only_its_conflicts_and_a_claim_outside_it_stays_held():
    a, b = queue("alice", "bob")
    assert claim_next(reviewer="rita") == ("alice", a.bag_id)
    assert claim_next(reviewer="rita", owner_prefix="bo") == ("bob", b.bag_id)
    assert claim_on(a.bag_id).reviewer == "rita"  # still held, though outside the filter
    assert claim_next(reviewer="rita", owner_prefix="zed") is None


def test_an_owner_prefix_with_like_wildcards_is_taken_literally():
    queue("a_b", "axb")
    assert claim_next(reviewer="rita", owner_prefix="a_") == ("a_b", split("a_b", "prod").bag_id)
    assert claim_next(reviewer="remy", owner_prefix="a_") is None


def test_an_expired_claim_is_free_for_the_next_reviewer():
    (a,) = queue("alice")
    past = timezone.now() - timedelta(minutes=11)
    assert claim_next(reviewer="rita", now=past) == ("alice", a.bag_id)
    assert claim_on(a.bag_id) is None  # expired by itself
    assert claim_next(reviewer="remy") == ("alice", a.bag_id)
    assert claim_on(a.bag_id).reviewer == "remy"


def test_nothing_is_handed_out_while_every_conflict_is_held(settings):
    queue("alice")
    assert claim_next(reviewer="rita") is not None
    assert claim_next(reviewer="remy") is None
    assert desk_progress(reviewer="remy").held_by_others == 1


def test_a_claim_lasts_atlaso_claim_minutes_and_activity_renews_it(settings):
    settings.ATLASO_CLAIM_MINUTES = 2.5
    (a,) = queue("alice")
    start = timezone.now()
    claim_next(reviewer="rita", now=start)
    row = ReviewClaim.objects.get(bag_id=a.bag_id)
    assert row.expires_at == start + timedelta(minutes=2.5)
    later = start + timedelta(minutes=2)
    assert claim_renew(reviewer="rita", bag_id=a.bag_id, now=later)
    row.refresh_from_db()
    assert row.expires_at == later + timedelta(minutes=2.5)
    assert row.claimed_at == start  # renewed, not taken anew
    assert not claim_renew(reviewer="remy", bag_id=a.bag_id, now=later)  # not his to renew


def test_take_over_passes_the_claim_and_the_other_reviewer_is_told_once():
    (a,) = queue("alice")
    claim_next(reviewer="rita")
    assert claim_take_over(reviewer="remy", user_id="alice", bag_id=a.bag_id) == "rita"
    assert claim_on(a.bag_id).reviewer == "remy"
    told = taken_from(reviewer="rita")
    assert [(c.reviewer, c.bag_id) for c in told] == [("remy", a.bag_id)]
    assert taken_from(reviewer="rita") == []
    # And rita's desk no longer hands it to her.
    assert claim_next(reviewer="rita") is None


def test_take_over_of_a_bag_no_longer_in_conflict_is_refused():
    (a,) = queue("alice")
    bag_resolve(user_id="alice", bag_id=a.bag_id, side="positive", reason="it holds", reviewer="rita")
    with pytest.raises(AtlasoError) as refused:
        claim_take_over(reviewer="remy", user_id="alice", bag_id=a.bag_id)
    assert refused.value.code == ALREADY_RESOLVED


# ---- Resolve respects claims ---------------------------------------------------------------


def test_resolve_on_a_conflict_another_reviewer_holds_is_refused_with_who_and_how_long():
    (a,) = queue("alice")
    claim_next(reviewer="rita")
    with pytest.raises(AtlasoError) as refused:
        bag_resolve(user_id="alice", bag_id=a.bag_id, keep=a.negative, reason="fails", reviewer="remy")
    assert refused.value.code == HELD
    assert refused.value.message.startswith("rita is on this · 10 min left")
    assert live("alice", a.bag_id) == set(a.positive + a.negative)  # nothing written
    claim_take_over(reviewer="remy", user_id="alice", bag_id=a.bag_id)
    bag_resolve(user_id="alice", bag_id=a.bag_id, keep=a.negative, reason="fails", reviewer="remy")


def test_resolve_releases_the_claim_forgets_every_skip_and_records_the_resolution():
    a, _b = queue("alice", "bob")
    conflict_skip(reviewer="remy", user_id="alice", bag_id=a.bag_id, note="ask the data team")
    claim_next(reviewer="rita")
    result = bag_resolve(
        user_id="alice", bag_id=a.bag_id, side="positive", reason="re-measured", reviewer="rita"
    )
    assert claim_on(a.bag_id) is None
    assert skipped_by(reviewer="remy") == []
    record = Resolution.objects.get(deposit_id=result.deposit.id)
    assert (record.reviewer, record.side, record.kept, record.superseded) == ("rita", "positive", 1, 1)
    assert desk_progress(reviewer="rita").resolved_today == 1


def test_a_holds_button_keeps_every_live_deposit_of_its_side():
    now = timezone.now()
    a = split("alice", "prod", positives=1, negatives=3, at=now)
    result = bag_resolve(
        user_id="alice", bag_id=a.bag_id, side="negative", reason="fails thrice", reviewer="rita"
    )
    assert result.deposit.polarity == "negative"
    assert live("alice", a.bag_id) == {*a.negative, result.deposit.id}
    assert sorted(result.deposit.contradicts) == sorted(a.positive)


def test_a_side_with_no_live_deposit_left_is_refused():
    (a,) = queue("alice")
    with pytest.raises(AtlasoError) as refused:
        bag_resolve(user_id="alice", bag_id=a.bag_id, side="cautionary", reason="?", reviewer="rita")
    assert refused.value.code == ALREADY_RESOLVED
    with pytest.raises(AtlasoError) as refused:
        bag_resolve(user_id="alice", bag_id=a.bag_id, side="sideways", reason="?", reviewer="rita")
    assert refused.value.details["field"] == "side"


# ---- Skip ----------------------------------------------------------------------------------


def test_a_skipped_conflict_comes_after_every_other_for_that_reviewer_only():
    a, b, c = queue("alice", "bob", "carol")
    assert claim_next(reviewer="rita") == ("alice", a.bag_id)
    conflict_skip(reviewer="rita", user_id="alice", bag_id=a.bag_id, note="ask the data team")
    assert claim_on(a.bag_id) is None  # released
    assert claim_next(reviewer="rita") == ("bob", b.bag_id)
    # For remy alice's conflict is still the oldest.
    assert claim_next(reviewer="remy") == ("alice", a.bag_id)
    claim_release(bag_id=a.bag_id)
    conflict_skip(reviewer="rita", user_id="bob", bag_id=b.bag_id)
    assert claim_next(reviewer="rita") == ("carol", c.bag_id)
    conflict_skip(reviewer="rita", user_id="carol", bag_id=c.bag_id)
    # Only skipped ones left: handed back in the order they were skipped.
    assert claim_next(reviewer="rita") == ("alice", a.bag_id)
    listed = skipped_by(reviewer="rita")
    assert [(s.bag.user_id, s.note) for s in listed] == [
        ("alice", "ask the data team"),
        ("bob", ""),
        ("carol", ""),
    ]


def test_back_to_a_skipped_conflict_claims_it_unless_someone_else_holds_it():
    a, _b = queue("alice", "bob")
    conflict_skip(reviewer="rita", user_id="alice", bag_id=a.bag_id)
    assert skip_return(reviewer="rita", user_id="alice", bag_id=a.bag_id)
    assert claim_on(a.bag_id).reviewer == "rita"
    assert skipped_by(reviewer="rita") == []
    conflict_skip(reviewer="rita", user_id="alice", bag_id=a.bag_id)
    claim_bag(reviewer="remy", user_id="alice", bag_id=a.bag_id)
    assert not skip_return(reviewer="rita", user_id="alice", bag_id=a.bag_id)
    assert claim_on(a.bag_id).reviewer == "remy"


def test_a_note_longer_than_2000_characters_is_refused():
    (a,) = queue("alice")
    with pytest.raises(AtlasoError) as refused:
        conflict_skip(reviewer="rita", user_id="alice", bag_id=a.bag_id, note="x" * 2001)
    assert refused.value.details["field"] == "note"


# ---- Undo ----------------------------------------------------------------------------------


def test_undo_revives_what_the_resolution_superseded_and_reopens_the_conflict():
    (a,) = queue("alice")
    claim_next(reviewer="rita")
    result = bag_resolve(user_id="alice", bag_id=a.bag_id, keep=a.positive, reason="holds", reviewer="rita")
    assert not ConflictEpisode.objects.filter(bag_id=a.bag_id, ended_at__isnull=True).exists()
    before_undo = timezone.now()
    claim_bag(reviewer="remy", user_id="alice", bag_id=a.bag_id)  # nothing to claim: not in conflict
    undone = resolution_undo(user_id="alice", deposit_id=result.deposit.id, reviewer="remy")
    assert (undone.undone_by, undone.undone_at is not None) == ("remy", True)
    assert live("alice", a.bag_id) == set(a.positive + a.negative)
    deposit = Deposit.objects.get(pk=result.deposit.id)
    assert deposit.retracted_reason == "undone by remy"
    reopened = ConflictEpisode.objects.get(bag_id=a.bag_id, ended_at__isnull=True)
    assert reopened.started_at >= before_undo  # dated at the undo
    # Back on the desk, for anyone.
    assert claim_next(reviewer="remy") == ("alice", a.bag_id)
    assert desk_progress(reviewer="rita").resolved_today == 0


def test_an_undone_conflict_keeps_waiting_since_it_began_through_every_undo():
    (a,) = queue("alice")
    began = ConflictEpisode.objects.get(bag_id=a.bag_id).started_at
    for side in (a.positive, a.negative):  # resolved and undone twice
        claim_next(reviewer="rita")
        result = bag_resolve(user_id="alice", bag_id=a.bag_id, keep=side, reason="sure", reviewer="rita")
        resolution_undo(user_id="alice", deposit_id=result.deposit.id, reviewer="rita")
        reopened = ConflictEpisode.objects.get(bag_id=a.bag_id, ended_at__isnull=True)
        assert reopened.started_at > began + timedelta(days=2)  # the episode is dated at the undo
        assert conflict_since("alice", a.bag_id) == began
        assert desk_progress(reviewer="rita").oldest_since == began
        assert desk_progress(reviewer="rita", owner_prefix="ali").oldest_since == began
        assert [item.conflict_since for item in conflict_queue().items] == [began]


def test_a_conflict_that_comes_back_after_an_agents_write_waits_from_then():
    (a,) = queue("alice")
    result = bag_resolve(user_id="alice", bag_id=a.bag_id, keep=a.positive, reason="sure", reviewer="rita")
    write("alice", "negative", "threshold 0.7 fails again", {**NARROW, "env": "prod"})
    again = ConflictEpisode.objects.get(bag_id=a.bag_id, ended_at__isnull=True)
    assert conflict_since("alice", a.bag_id) == again.started_at > result.deposit.created_at


def test_undo_twice_is_refused_and_says_who_undid_it():
    (a,) = queue("alice")
    result = bag_resolve(user_id="alice", bag_id=a.bag_id, keep=a.positive, reason="holds", reviewer="rita")
    resolution_undo(user_id="alice", deposit_id=result.deposit.id, reviewer="remy")
    with pytest.raises(AtlasoError) as refused:
        resolution_undo(user_id="alice", deposit_id=result.deposit.id, reviewer="rita")
    assert "undone by remy" in refused.value.message


def test_undo_releases_the_bags_claim():
    (a,) = queue("alice")
    result = bag_resolve(user_id="alice", bag_id=a.bag_id, keep=a.positive, reason="holds", reviewer="rita")
    resolution_undo(user_id="alice", deposit_id=result.deposit.id, reviewer="rita")
    claim_next(reviewer="rita")
    second = bag_resolve(user_id="alice", bag_id=a.bag_id, keep=a.negative, reason="fails", reviewer="rita")
    resolution_undo(user_id="alice", deposit_id=second.deposit.id, reviewer="rita")
    assert claim_on(a.bag_id) is None


def test_a_resolution_retracted_through_the_api_reads_as_undone_and_an_erased_one_is_gone():
    a, b = queue("alice", "bob")
    first = bag_resolve(user_id="alice", bag_id=a.bag_id, keep=a.positive, reason="holds", reviewer="rita")
    second = bag_resolve(user_id="bob", bag_id=b.bag_id, keep=b.positive, reason="holds", reviewer="rita")
    deposit_retract(user_id="alice", deposit_id=first.deposit.id, mode="soft", reason="agent said so")
    deposit_retract(user_id="bob", deposit_id=second.deposit.id, mode="hard", reason="personal data")
    page = resolution_page()
    assert [r.user_id for r in page.items] == ["alice"]
    (record,) = page.items
    assert record.undone and record.undone_by is None and record.retracted_reason == "agent said so"
    assert live("alice", a.bag_id) == set(a.positive + a.negative)
    assert live("bob", b.bag_id) == set(b.positive + b.negative)


def test_the_resolved_list_filters_by_reviewer_and_owner_newest_first():
    a, b, c = queue("alice", "bob", "carol")
    bag_resolve(user_id="alice", bag_id=a.bag_id, keep=a.positive, reason="one", reviewer="rita")
    bag_resolve(user_id="bob", bag_id=b.bag_id, keep=b.positive, reason="two", reviewer="remy")
    bag_resolve(user_id="carol", bag_id=c.bag_id, keep=c.negative, reason="three", reviewer="rita")
    assert [r.reason for r in resolution_page().items] == ["three", "two", "one"]
    assert [r.reason for r in resolution_page(reviewer="rita").items] == ["three", "one"]
    assert [r.reason for r in resolution_page(owner_prefix="bo").items] == ["two"]
    assert [r.side for r in resolution_page().items] == ["negative", "positive", "positive"]
