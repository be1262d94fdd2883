"""Twenty reviewers opening the review desk at the same instant (PostgreSQL, real commits).

Each thread asks for the next conflict at once; a claim taken by reading who holds a bag and then
writing would hand one bag to several of them. The desk's single conditional write cannot.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from deposits.models import ReviewClaim
from deposits.services.review import claim_next
from tests.deposits.dashboard import split
from tests.deposits.test_concurrency import all_at_once

THREADS = 20
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def everyone_at_once(count: int) -> list[tuple[str, str] | None]:
    """`count` reviewers (reviewer-0 …) asking the desk for a conflict, released together."""
    return all_at_once(count, lambda _client, index: claim_next(reviewer=f"reviewer-{index}"))


def conflicts(count: int) -> set[str]:
    now = timezone.now()
    return {split(f"owner-{i:02d}", "prod", at=now - timedelta(hours=count - i)).bag_id for i in range(count)}


@pytest.mark.parametrize("open_conflicts", [THREADS, 5])
def test_twenty_reviewers_at_once_each_conflict_goes_to_at_most_one_and_none_is_lost(
    on_postgres, open_conflicts, figures
):
    bags = conflicts(open_conflicts)
    connection.close()
    answers = everyone_at_once(THREADS)
    handed = [bag_id for _user, bag_id in filter(None, answers)]
    twice = {bag: n for bag, n in Counter(handed).items() if n > 1}
    assert not twice, f"conflicts handed to more than one reviewer: {twice}"
    # None lost: as many reviewers served as there were conflicts, every conflict claimed.
    assert set(handed) == bags, f"{len(bags) - len(set(handed))} conflicts left unclaimed"
    assert answers.count(None) == THREADS - open_conflicts
    holders = dict(ReviewClaim.objects.values_list("bag_id", "reviewer"))
    for index, answer in enumerate(answers):
        if answer is not None:
            assert holders[answer[1]] == f"reviewer-{index}"
    figures(
        f"{THREADS} reviewers claiming at once over {open_conflicts} open conflicts: "
        f"{len(set(handed))} claimed, each by one reviewer; {answers.count(None)} told none is free"
    )
