"""A bag row keeps at most ROW_LEXEMES lexemes, the rest in chunks, and recall finds it by either.

deposits.sql.bag_terms, written through the services; the property installs the trigger with small
bounds (inside the test's transaction) to reach them on small stores.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import defaultdict

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deposits.models import Deposit
from deposits.selectors.recall import recall
from deposits.services.deposits import deposit_retract
from deposits.sql import bag_terms
from deposits.sql.rules import live_sql
from tests.deposits.functions import installed_body, spelled_body
from tests.deposits.scenario import claim, correct, put, put_many, retract

pytestmark = pytest.mark.django_db
SCOPE = {"model": "gpt-5", "dataset": "notes", "env": "prod"}


def notes(prefix: str, start: int, stop: int, polarity: str = "positive") -> list[dict]:
    """Deposits of 30 words each, `{prefix}{n}x` for n from start to stop.

    Words no other deposit holds, which English stems no further.
    """
    return [
        claim(polarity, "marker " + " ".join(f"{prefix}{n:05d}x" for n in range(first, first + 30)), SCOPE)
        for first in range(start, stop, 30)
    ]


def row_and_chunks(user: str) -> dict[str, tuple[set[str], list[set[str]]]]:
    """Each bag's lexemes in its row, and in each of its chunks."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, coalesce(tsvector_to_array(live_terms), '{}') FROM deposits_scopebag WHERE user_id = %s",
            [user],
        )
        bags = {bag: (set(row), []) for bag, row in cursor.fetchall()}
        cursor.execute(
            f"SELECT bag_id, tsvector_to_array(terms) FROM {bag_terms.TABLE} WHERE user_id = %s", [user]
        )
        for bag, chunk in cursor.fetchall():
            bags[bag][1].append(set(chunk))
    return bags


def live_lexemes(user: str) -> dict[str, set[str]]:
    """Each bag's lexemes, read from its live deposits' own text vectors."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT d.bag_id, tsvector_to_array(d.search_vector) FROM deposits_deposit d "
            f"WHERE d.user_id = %s AND {live_sql('d')}",
            [user],
        )
        held: dict[str, set[str]] = defaultdict(set)
        for bag, lexemes in cursor.fetchall():
            held[bag] |= set(lexemes)
    return held


def assert_row_and_chunks_hold_the_live_lexemes(user: str, row_lexemes: int = bag_terms.ROW_LEXEMES) -> None:
    held = live_lexemes(user)
    for bag, (row, chunks) in row_and_chunks(user).items():
        assert row | set().union(*chunks) == held.get(bag, set()), bag
        assert len(row) <= row_lexemes and all(len(chunk) <= row_lexemes for chunk in chunks)


def test_a_bag_past_the_bound_keeps_its_row_small_and_every_lexeme_of_its_deposits(on_postgres):
    # An owner writing without thinking of scopes: 1,500 distinct words in one bag, 30 a deposit.
    put_many(notes("w", 0, 1500), user="wide")

    (row, chunks), *_ = row_and_chunks("wide").values()
    assert len(chunks) >= 2
    assert len(row) <= bag_terms.ROW_LEXEMES
    assert_row_and_chunks_hold_the_live_lexemes("wide")


def test_recall_finds_the_bag_by_a_word_of_its_chunks_or_of_its_row_and_counts_it_once(on_postgres):
    put_many(notes("w", 0, 1500), user="wide")
    put("negative", "marker quokka disputed", SCOPE, user="wide")
    (row, chunks), *_ = row_and_chunks("wide").values()
    assert "quokka" in row and "w00007x" in set().union(*chunks) and "w00007x" not in row

    for query in ("w00007x", "quokka", "quokka w00007x", "marker"):
        found = recall(user_id="wide", query=query, limit=5)
        assert (found.bag_count, found.conflict_bag_count) == (1, 1), query
    assert recall(user_id="wide", query="w99999x").bag_count == 0


def test_a_word_whose_only_holder_is_retracted_superseded_or_erased_no_longer_finds_the_bag(on_postgres):
    # One write past the bound: every lexeme of it goes to chunks.
    walrus, narwhal, beluga, *_ = put_many(
        [claim("positive", word, SCOPE) for word in ("walrus", "narwhal", "beluga")] + notes("w", 0, 1500),
        user="wide",
    )
    (row, chunks), *_ = row_and_chunks("wide").values()
    assert {"walrus", "narwhal", "beluga"} <= set().union(*chunks) - row
    assert all(recall(user_id="wide", query=word).bag_count == 1 for word in ("walrus", "narwhal", "beluga"))

    retract(walrus, user="wide")
    correct([narwhal], "orca", user="wide")
    deposit_retract(user_id="wide", deposit_id=beluga, mode="hard")

    for word in ("walrus", "narwhal", "beluga"):
        assert recall(user_id="wide", query=word).bag_count == 0, word
    assert recall(user_id="wide", query="orca w00007x").bag_count == 1
    assert_row_and_chunks_hold_the_live_lexemes("wide")


@pytest.mark.django_db(transaction=True)
def test_a_write_past_the_bound_racing_a_recount_of_its_bag_keeps_every_word_it_brings(on_postgres):
    """A word the chunks held is kept by a write past the bound that races a recount of its bag.

    The write's bag row is spilled before its lock is taken (INSERT … ON CONFLICT runs BEFORE INSERT
    triggers first), while the recount holding that lock is deleting the bag's chunks.
    """
    walrus, *_ = put_many([claim("positive", "walrus", SCOPE), *notes("w", 0, 1500)], user="race")
    recounting, resume = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def recount() -> None:  # retracts the only walrus, so the recount writes the chunks without it
        try:
            with transaction.atomic():
                retract(walrus, user="race")
                recounting.set()
                resume.wait(timeout=60)
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            connection.close()

    def write() -> None:  # a new walrus, among more new words than a row keeps
        try:
            put_many([claim("positive", "walrus again", SCOPE), *notes("v", 0, 900)], user="race")
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    first = threading.Thread(target=recount)
    first.start()
    assert recounting.wait(timeout=60)
    second = threading.Thread(target=write)
    second.start()
    deadline = time.monotonic() + 60
    while not _waiting_for_a_lock() and time.monotonic() < deadline:
        time.sleep(0.05)
    resume.set()
    first.join(timeout=120)
    second.join(timeout=120)

    assert not errors, errors
    assert recall(user_id="race", query="walrus").bag_count == 1
    assert_row_and_chunks_hold_the_live_lexemes("race")


def _waiting_for_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] > 0


def test_the_installed_trigger_function_and_match_function_are_the_ones_the_code_spells(on_postgres):
    from deposits.search.postgres import OVERFLOW_MATCH_FUNCTION, overflow_match_function_sql

    assert installed_body(bag_terms.FUNCTION) == spelled_body(bag_terms.function_sql())
    assert installed_body(OVERFLOW_MATCH_FUNCTION) == spelled_body(overflow_match_function_sql())


# --- The rule on random stores, with bounds small enough to reach -----------------------------

SMALL_ROW, SMALL_KEPT = 6, 2
VOCABULARY = [f"t{n}x" for n in range(14)]
SCOPES = [SCOPE, {**SCOPE, "env": "dev"}]

operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"),
            st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=5),
            st.integers(0, len(SCOPES) - 1),
        ),
        st.tuples(st.just("bulk"), st.lists(st.sampled_from(VOCABULARY), min_size=3, max_size=9), st.just(0)),
        st.tuples(st.just("correct"), st.lists(st.sampled_from(VOCABULARY), max_size=3), st.integers(0, 40)),
        st.tuples(st.just("retract"), st.just([]), st.integers(0, 40)),
        st.tuples(st.just("erase"), st.just([]), st.integers(0, 40)),
    ),
    min_size=1,
    max_size=16,
)


@pytest.fixture
def small_bounds(on_postgres):
    """The trigger with bounds a few deposits pass; the test's transaction puts the real one back."""
    with connection.cursor() as cursor:
        for statement in bag_terms.install_sql(SMALL_ROW, SMALL_KEPT):
            cursor.execute(statement)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_row_and_chunks_hold_exactly_the_live_lexemes_and_recall_counts_each_bag_once(ops, small_bounds):
    user = f"chunks-{uuid.uuid4().hex[:12]}"
    written: list[str] = []
    for kind, words, pick in ops:
        if kind == "add":
            written.append(put("positive", " ".join(words), SCOPES[pick], user=user))
        elif kind == "bulk":
            written += put_many(
                [claim("open", " ".join(words[i : i + 3]), SCOPE) for i in range(0, len(words), 3)], user=user
            )
        elif written and kind == "correct":
            target = written[pick % len(written)]
            if Deposit.objects.filter(pk=target, retracted_at__isnull=True).exists():
                written.append(correct([target], " ".join(words) or "plain", polarity="negative", user=user))
        elif written and kind == "retract":
            retract(written[pick % len(written)], user=user)
        elif written and kind == "erase":
            deposit_retract(user_id=user, deposit_id=written.pop(pick % len(written)), mode="hard")

    assert_row_and_chunks_hold_the_live_lexemes(user, SMALL_ROW)
    held = live_lexemes(user)
    for query in (VOCABULARY[0], VOCABULARY[5], f"{VOCABULARY[3]} {VOCABULARY[9]} {VOCABULARY[12]}"):
        wanted = set(query.split())
        expected = sum(1 for lexemes in held.values() if lexemes & wanted)
        assert recall(user_id=user, query=query, limit=50).bag_count == expected, query
