"""One flag for one state: a bag corrected once but still taking two sides is in conflict, not resolved."""

from __future__ import annotations

import pytest

from deposits.models import Deposit
from deposits.selectors.bags import bag_detail
from tests.deposits.dashboard import logged_in
from tests.deposits.scenario import NARROW, correct, put

pytestmark = pytest.mark.django_db


def bag_of(deposit_id: str) -> str:
    return Deposit.objects.get(pk=deposit_id).bag_id


def test_a_bag_still_split_after_a_correction_flags_conflict_and_not_resolved():
    a = put("positive", "threshold 0.7 holds", NARROW)
    b = put("negative", "threshold 0.7 fails on run 1", NARROW)
    put("negative", "threshold 0.7 fails on run 2", NARROW)
    correct([b], "run 1 was misconfigured", polarity="positive")
    bag = bag_detail(user_id="alice", bag_id=bag_of(a))
    assert bag.has_disagreement and not bag.resolved
    html = logged_in("reviewer").get(f"/owners/alice/bags/{bag.bag_id}/").content.decode()
    flags = html.split("<dt>Flags", 1)[1].split("</dd>", 1)[0]
    assert 'class="badge conflict"' in flags and 'class="badge resolved"' not in flags


def test_settling_the_last_disagreement_makes_it_resolved():
    a = put("positive", "threshold 0.7 holds", NARROW)
    b = put("negative", "threshold 0.7 fails", NARROW)
    correct([b], "it was misconfigured", polarity="positive")
    bag = bag_detail(user_id="alice", bag_id=bag_of(a))
    assert bag.resolved and not bag.has_disagreement
