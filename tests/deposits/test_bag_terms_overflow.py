"""A bag whose words outgrow PostgreSQL's tsvector (1 MB) keeps accepting writes and is still found."""

from __future__ import annotations

import random

import pytest

from deposits.domain.validation import validate_bulk, validate_deposit
from deposits.models import ScopeBag
from deposits.selectors.recall import recall
from deposits.services.deposits import deposit_add, deposit_add_many
from tests.deposits.functions import installed_body, spelled_body
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


def test_a_bag_past_the_limit_matches_only_through_its_live_deposits(on_postgres):
    """A bag that keeps no lexemes is found through its live deposits alone.

    Recall asks its deposits, so a word only a retracted one held, or one a correction superseded,
    no longer finds it.
    """
    from django.db import connection

    from deposits.services.deposits import deposit_retract

    rng = random.Random(9)
    items = [
        {**claim("positive", f"marker {distinct_words(rng, 220)}", SCOPE), "idempotency_key": f"k{i}"}
        for i in range(160)
    ]
    for start in range(0, len(items), 40):
        assert not deposit_add_many(
            bulk=validate_bulk("wide", items[start : start + 40]), channel="agent-a"
        ).failed
    retracted = deposit_add(
        draft=validate_deposit("wide", claim("positive", "walrus", SCOPE)), channel="agent-a"
    )
    old = deposit_add(draft=validate_deposit("wide", claim("positive", "narwhal", SCOPE)), channel="agent-a")
    with connection.cursor() as cursor:
        cursor.execute("SELECT terms_overflow FROM deposits_scopebag WHERE user_id = 'wide'")
        assert cursor.fetchone() == (True,)
    assert recall(user_id="wide", query="walrus").bag_count == 1
    assert recall(user_id="wide", query="narwhal").bag_count == 1

    deposit_retract(user_id="wide", deposit_id=retracted.deposit.id, reason="misheard")
    deposit_add(
        draft=validate_deposit(
            "wide", {**claim("positive", "beluga", SCOPE), "contradicts": [old.deposit.id]}
        ),
        channel="agent-a",
    )
    assert recall(user_id="wide", query="walrus").bag_count == 0
    assert recall(user_id="wide", query="narwhal").bag_count == 0
    assert recall(user_id="wide", query="beluga marker").bag_count == 1


def test_the_installed_terms_function_is_the_one_the_code_spells(on_postgres):
    from deposits.services.bag_counts import TERMS_ADD_FUNCTION, terms_add_function_sql

    assert installed_body(TERMS_ADD_FUNCTION) == spelled_body(terms_add_function_sql())


def test_one_batch_whose_words_alone_outgrow_a_tsvector_is_written_and_its_bag_marked(on_postgres):
    """The write's own text is past the limit before any bag's lexemes are added (the slow path)."""
    from django.db import connection

    rng = random.Random(11)
    # 33-character words, ~235 to a deposit: about 1.07 MB of distinct lexemes in one batch.
    items = [
        {**claim("positive", f"marker {distinct_words(rng, 235)}", SCOPE), "idempotency_key": f"k{i}"}
        for i in range(135)
    ]
    result = deposit_add_many(bulk=validate_bulk("wide", items), channel="agent-a")
    assert not result.failed and len(result.committed) == 135
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT terms_overflow, live_terms IS NULL FROM deposits_scopebag WHERE user_id = 'wide'"
        )
        assert cursor.fetchone() == (True, True)
    assert ScopeBag.objects.get(user_id="wide").live_positive == 135
    assert recall(user_id="wide", query="marker", limit=3).bag_count == 1


def test_the_installed_overflow_match_function_is_the_one_the_code_spells(on_postgres):
    """A change to `live` (which the function spells) needs a migration too."""
    from deposits.search.postgres import OVERFLOW_MATCH_FUNCTION, overflow_match_function_sql

    assert installed_body(OVERFLOW_MATCH_FUNCTION) == spelled_body(overflow_match_function_sql())
