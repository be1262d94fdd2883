"""Simultaneous requests against real commits (PostgreSQL): one key, one deposit; one bag, right counts."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from beliefs.services import api_key_create
from deposits.models import Deposit, IdempotencyEntry, ScopeBag
from tests.deposits.recount import assert_bags_match_a_recount

THREADS = 20
SCOPE = {"model": "gpt-5", "dataset": "q1", "env": "prod"}
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def secret(*perms: str) -> str:
    chosen = perms or ("read", "write")
    return api_key_create(
        name="concurrent", channel_name="agent-a", tier_name="agent_own", permissions=chosen
    )[1]


def all_at_once(count: int, request: Callable[[Client, int], Any]) -> list[Any]:
    """Run `request` in `count` threads released together; each thread has its own client and connection."""
    barrier = threading.Barrier(count)
    answers: list[Any] = [None] * count
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        try:
            client = Client()
            barrier.wait(timeout=30)
            answers[index] = request(client, index)
        except BaseException as error:  # reported to the test below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return answers


def post(client: Client, key: str, path: str, body: dict) -> tuple[int, dict]:
    response = client.post(
        f"/api/v1{path}",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    return response.status_code, response.json()


def delete(client: Client, key: str, path: str) -> tuple[int, dict]:
    response = client.delete(f"/api/v1{path}", HTTP_AUTHORIZATION=f"Bearer {key}")
    return response.status_code, response.json()


def old_negatives(key: str, count: int) -> list[str]:
    client = Client()
    body = {"scope": SCOPE, "polarity": "negative"}
    ids = [
        post(client, key, "/users/alice/deposits", {**body, "content": f"old {i}"})[1]["deposit"]["id"]
        for i in range(count)
    ]
    connection.close()
    return ids


def test_twenty_simultaneous_posts_with_one_key_create_exactly_one_deposit(on_postgres):
    key = secret()
    body = {"content": "likes tea", "scope": SCOPE, "idempotency_key": "ak_same"}
    answers = all_at_once(THREADS, lambda client, _: post(client, key, "/users/alice/deposits", body))
    statuses = sorted(status for status, _ in answers)
    assert statuses == [200] * (THREADS - 1) + [201], answers
    assert len({body["deposit"]["id"] for _, body in answers}) == 1
    assert Deposit.objects.count() == 1
    assert IdempotencyEntry.objects.count() == 1
    assert ScopeBag.objects.get().live_open == 1


def test_twenty_simultaneous_posts_reusing_one_expired_key_create_exactly_one_new_deposit(on_postgres):
    key = secret()
    body = {"content": "likes tea", "scope": SCOPE, "idempotency_key": "ak_same"}
    first = post(Client(), key, "/users/alice/deposits", body)[1]["deposit"]["id"]
    IdempotencyEntry.objects.update(created_at=timezone.now() - timedelta(hours=25))
    connection.close()
    answers = all_at_once(THREADS, lambda client, _: post(client, key, "/users/alice/deposits", body))
    statuses = sorted(status for status, _ in answers)
    assert statuses == [200] * (THREADS - 1) + [201], answers
    renewed = {body["deposit"]["id"] for _, body in answers}
    assert len(renewed) == 1 and first not in renewed
    assert Deposit.objects.count() == 2
    assert str(IdempotencyEntry.objects.get().deposit_id) in renewed


def test_twenty_simultaneous_writes_to_one_bag_leave_counts_equal_to_a_recount(on_postgres):
    key = secret()
    polarities = [
        {"polarity": "open"},
        {"polarity": "positive", "evidence_grade": "observed"},
        {"polarity": "negative"},
        {"polarity": "cautionary"},
    ]

    def add(client: Client, index: int) -> tuple[int, dict]:
        body = {"content": f"claim {index}", "scope": SCOPE, **polarities[index % 4]}
        return post(client, key, "/users/alice/deposits", body)

    answers = all_at_once(THREADS, add)
    assert [status for status, _ in answers] == [201] * THREADS, answers
    bag = ScopeBag.objects.get()
    assert (bag.live_open, bag.live_positive, bag.live_negative, bag.live_cautionary) == (5, 5, 5, 5)
    assert_bags_match_a_recount()


def test_simultaneous_adds_corrections_and_retractions_in_one_bag_leave_counts_equal_to_a_recount(
    on_postgres,
):
    key = secret()
    targets = old_negatives(key, 10)

    def act(client: Client, index: int) -> tuple[int, dict]:
        if index < 5:
            body = {"content": f"fix {index}", "contradicts": [targets[index]], "reason": "re-measured"}
            return post(client, key, "/users/alice/contradict", body)
        if index < 10:
            return delete(client, key, f"/users/alice/deposits/{targets[index]}")
        body = {"content": f"new {index}", "scope": SCOPE, "polarity": "cautionary"}
        return post(client, key, "/users/alice/deposits", body)

    answers = all_at_once(THREADS, act)
    assert sorted(status for status, _ in answers) == [200] * 5 + [201] * 15, answers
    bag = ScopeBag.objects.get()
    assert (bag.live_negative, bag.live_open, bag.live_cautionary, bag.kept_superseded) == (0, 5, 10, 5)
    assert_bags_match_a_recount()


def test_correcting_and_retracting_the_same_deposits_at_once_all_succeed(on_postgres):
    key = secret()
    targets = old_negatives(key, THREADS // 2)

    def act(client: Client, index: int) -> tuple[int, dict]:
        target = targets[index // 2]
        if index % 2:
            body = {"content": f"fix {index}", "contradicts": [target], "reason": "re-measured"}
            return post(client, key, "/users/alice/contradict", body)
        return delete(client, key, f"/users/alice/deposits/{target}")

    answers = all_at_once(THREADS, act)
    assert sorted(status for status, _ in answers) == [200] * 10 + [201] * 10, answers
    assert Deposit.objects.filter(retracted_at__isnull=False).count() == 10
    assert_bags_match_a_recount()


def test_a_correction_racing_the_erasure_of_its_target_is_written_or_refused_never_broken(on_postgres):
    key = secret("read", "write", "erase")
    targets = old_negatives(key, THREADS // 2)

    def act(client: Client, index: int) -> tuple[int, dict]:
        target = targets[index // 2]
        if index % 2:
            body = {"content": f"fix {index}", "contradicts": [target], "reason": "re-measured"}
            return post(client, key, "/users/alice/contradict", body)
        return delete(client, key, f"/users/alice/deposits/{target}?mode=hard")

    answers = all_at_once(THREADS, act)
    erasures, corrections = answers[0::2], answers[1::2]
    assert [status for status, _ in erasures] == [200] * 10, erasures
    for status, body in corrections:
        assert status == 201 or (status == 422 and body["error"]["code"] == "missing_contradicts"), body
    written = sum(status == 201 for status, _ in corrections)
    assert Deposit.objects.count() == written
    assert_bags_match_a_recount()


def test_an_add_racing_the_erasure_of_its_bags_last_deposit_lands_in_a_bag_that_holds_it(on_postgres):
    # The erasure deletes the bag it empties; an add into that bag at the same moment writes the
    # bag anew (or finds it still there), and either way is counted in it.
    key = secret("read", "write", "erase")
    client = Client()
    lonely = [
        post(client, key, "/users/alice/deposits", {"content": f"only {i}", "scope": {**SCOPE, "n": i}})[1]
        for i in range(THREADS // 2)
    ]
    connection.close()

    def act(client: Client, index: int) -> tuple[int, dict]:
        pair = index // 2
        if index % 2:
            body = {"content": f"another {pair}", "scope": {**SCOPE, "n": pair}}
            return post(client, key, "/users/alice/deposits", body)
        return delete(client, key, f"/users/alice/deposits/{lonely[pair]['deposit']['id']}?mode=hard")

    answers = all_at_once(THREADS, act)
    assert sorted(status for status, _ in answers) == [200] * 10 + [201] * 10, answers
    assert Deposit.objects.count() == THREADS // 2
    assert set(ScopeBag.objects.values_list("id", flat=True)) == set(
        Deposit.objects.values_list("bag_id", flat=True)
    )
    assert_bags_match_a_recount()
