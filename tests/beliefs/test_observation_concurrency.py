"""Simultaneous observations against real commits (PostgreSQL): one key, one revision, one shift."""

from __future__ import annotations

import pytest

from beliefs.models import Belief, BeliefRevision, ObservationKey
from tests.beliefs.helpers import KEY, NEW
from tests.deposits.test_concurrency import THREADS, all_at_once, post, secret

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_twenty_simultaneous_observations_with_one_key_record_one_revision(on_postgres):
    key = secret()
    body = {"value": NEW, "idempotency_key": "ak_same-observation"}
    path = f"/users/alice/beliefs/{KEY}/observations"
    answers = all_at_once(THREADS, lambda client, _: post(client, key, path, body))
    statuses = sorted(status for status, _ in answers)
    assert statuses == [200] * (THREADS - 1) + [201], answers
    assert len({answer["sequence"] for _, answer in answers}) == 1
    assert BeliefRevision.objects.count() == 1
    assert ObservationKey.objects.count() == 1
    belief = Belief.objects.get()
    # One shift: a first trusted sighting at c = 0.7 on agent_own leaves p = 0.7.
    assert belief.observation_count == 1
    assert belief.probability == pytest.approx(0.7)


def test_twenty_simultaneous_observations_with_one_key_and_different_values_record_one(on_postgres):
    key = secret()
    path = f"/users/alice/beliefs/{KEY}/observations"
    answers = all_at_once(
        THREADS,
        lambda client, i: post(client, key, path, {"value": f"{i} oz", "idempotency_key": "ak_one"}),
    )
    statuses = sorted(status for status, _ in answers)
    assert statuses == [201] + [409] * (THREADS - 1), answers
    assert BeliefRevision.objects.count() == 1
    assert Belief.objects.get().observation_count == 1
