"""A bag whose words outgrow PostgreSQL's tsvector (1 MB) keeps accepting writes and is still found."""

from __future__ import annotations

import random

import pytest

from deposits.domain.validation import validate_bulk, validate_deposit
from deposits.models import ScopeBag
from deposits.selectors.recall import recall
from deposits.services.deposits import deposit_add, deposit_add_many
from tests.deposits.scenario import claim

pytestmark = pytest.mark.django_db
SCOPE = {"model": "gpt-5", "dataset": "wide", "env": "prod"}


def distinct_words(rng: random.Random, count: int) -> str:
    return " ".join("w" + "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=32)) for _ in range(count))


def test_a_bag_past_the_tsvector_limit_accepts_writes_and_its_conflict_still_shows(on_postgres):
    rng = random.Random(9)
    items = [
        {**claim("positive", f"marker {distinct_words(rng, 220)}", SCOPE), "idempotency_key": f"k{i}"}
        for i in range(160)
    ]
    for start in range(0, len(items), 40):
        result = deposit_add_many(bulk=validate_bulk("wide", items[start : start + 40]), channel="agent-a")
        assert not result.failed
    added = deposit_add(
        draft=validate_deposit("wide", claim("negative", "marker disputed", SCOPE)), channel="agent-a"
    )
    assert added.deposit.polarity == "negative"

    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT terms_overflow FROM deposits_scopebag WHERE user_id = 'wide'")
        assert cursor.fetchone() == (True,)
    results = recall(user_id="wide", query="marker", limit=3)
    assert results.has_disagreement and results.conflict_bag_count == 1 == results.bag_count
    assert ScopeBag.objects.get(user_id="wide").live_negative == 1
