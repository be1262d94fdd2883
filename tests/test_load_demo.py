from __future__ import annotations

import pytest
from django.core.management import call_command

from beliefs.models import BeliefRevision
from beliefs.selectors import belief_verdict
from deposits.models import Contradiction, Deposit


@pytest.mark.django_db
def test_loading_the_demo_twice_changes_nothing_and_it_has_a_conflict_a_correction_and_a_belief():
    call_command("load_demo")
    counts = (Deposit.objects.count(), Contradiction.objects.count(), BeliefRevision.objects.count())
    call_command("load_demo")
    assert (Deposit.objects.count(), Contradiction.objects.count(), BeliefRevision.objects.count()) == counts
    assert counts[1] >= 1
    verdict = belief_verdict(user_id="alice", key="diet:milk")
    assert (
        verdict.fact == "soy milk"
        and verdict.superseded == ("oat milk",)
        and verdict.inert == ("whole milk",)
    )
