"""deposits/0027 regroups the bags of a store written before scope values were compared in NFC.

Two spellings of one scope become one bag, recounted, its conflict flagged, and every deposit kept
with everything it holds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from importlib import import_module
from unittest import mock

import pytest
from django.apps import apps
from django.db import DatabaseError, transaction

from deposits.domain.bags import bag_id
from deposits.domain.types import Scope
from deposits.models import ConflictEpisode, Deposit, Resolution, ReviewClaim, ReviewSkip, ScopeBag
from deposits.services.review import bag_resolve, claim_bag, conflict_skip
from tests.deposits.recount import assert_bags_match_a_recount
from tests.deposits.scenario import now, put
from tests.deposits.test_api_erasure_leftovers import SchemaEditor

COMPOSED, DECOMPOSED = "caf\u00e9", "cafe\u0301"
SCOPE = {"model": "gpt-5", "dataset": "evals"}


def spelled_apart_bag_id(user_id: str, scope: Scope) -> str:
    """A bag's id before NFC: the facets hashed as sent."""
    key = json.dumps([user_id, *scope.facets], separators=(",", ":"), ensure_ascii=False)
    return "bag_" + hashlib.blake2b(key.encode("utf-8"), digest_size=12).hexdigest()


@contextmanager
def bags_spelled_apart() -> Iterator[None]:
    """Writes inside group bags by spelling, as in the stores 0027 migrates: the facets as sent."""
    with (
        mock.patch("deposits.services.deposits.compute_bag_id", spelled_apart_bag_id),
        mock.patch("deposits.services.deposits.bag_scope", lambda scope: scope),
    ):
        yield


def regroup() -> None:
    import_module("deposits.migrations.0027_scope_bags_in_nfc").regroup(apps, SchemaEditor())


def env(spelling: str, **more: object) -> dict[str, object]:
    return {**SCOPE, "env": spelling, **more}


def snapshot() -> dict[str, tuple]:
    """Every deposit with what it holds but its bag."""
    return {
        str(row.pk): (
            row.content,
            row.polarity,
            row.scope_env,
            row.scope_note,
            row.artifact_refs,
            row.retracted_at,
        )
        for row in Deposit.objects.all()
    }


def test_two_spellings_of_one_scope_become_one_bag_in_conflict_keeping_every_deposit(api):
    day = timedelta(days=1)
    with bags_spelled_apart():
        works = put(
            "positive", "espresso threshold works", env(COMPOSED, note="composed"), at=now() - 3 * day
        )
        fails = put(
            "negative", "espresso threshold fails", env(DECOMPOSED, note="decomposed"), at=now() - 2 * day
        )
        also = put("negative", "espresso threshold fails again", env(DECOMPOSED), at=now() - day)
        alone = put("positive", "espresso threshold works for bob", env(DECOMPOSED), user="bob")
        plain = put("positive", "espresso threshold in prod", env("prod"))
    assert ScopeBag.objects.count() == 4 and not ConflictEpisode.objects.exists()
    kept = snapshot()
    regroup()
    assert snapshot() == kept  # every deposit, its scope as sent
    merged = bag_id("alice", Scope(**env(COMPOSED)))
    assert set(Deposit.objects.filter(pk__in=[works, fails, also]).values_list("bag_id", flat=True)) == {
        merged
    }
    assert Deposit.objects.get(pk=alone).bag_id == bag_id("bob", Scope(**env(COMPOSED)))
    assert Deposit.objects.get(pk=plain).bag_id == bag_id("alice", Scope(**env("prod")))
    assert sorted(ScopeBag.objects.values_list("env", flat=True)) == [COMPOSED, COMPOSED, "prod"]
    # The conflict is flagged, dated when its second side arrived, and counted in the tallies.
    episode = ConflictEpisode.objects.get()
    assert (episode.bag_id, episode.ended_at) == (merged, None)
    assert episode.started_at == Deposit.objects.get(pk=fails).created_at
    assert_bags_match_a_recount()
    bag = api.get(f"/users/alice/bags/{merged}").body
    assert (bag["has_disagreement"], bag["counts"]["positive"], bag["counts"]["negative"]) == (True, 1, 2)
    recall = api.get("/users/alice/recall?q=espresso+threshold").body
    assert recall["has_disagreement"] and recall["conflict_bag_count"] == 1
    assert {hit["id"] for hit in recall["items"]} == {works, fails, also, plain}
    # The database keeps deposits immutable again.
    with pytest.raises(DatabaseError), transaction.atomic():
        Deposit.objects.filter(pk=works).update(bag_id=plain)
    regroup()  # a second run finds nothing to do
    assert snapshot() == kept and ScopeBag.objects.count() == 3
    assert_bags_match_a_recount()


def test_what_the_review_desk_holds_of_either_bag_follows_it(api):
    with bags_spelled_apart():
        put("positive", "espresso threshold works", env(COMPOSED))
        put("negative", "espresso threshold fails", env(COMPOSED))
        kept = put("positive", "espresso threshold works here", env(DECOMPOSED))
        lost = put("negative", "espresso threshold fails here", env(DECOMPOSED))
        spelled = {row.scope_env: row.bag_id for row in Deposit.objects.all()}
        # Both bags in conflict, each with its episode; one resolved (its resolution deposit
        # written into the decomposed bag), the other skipped and claimed.
        first = ConflictEpisode.objects.get(bag_id=spelled[COMPOSED])
        resolution = bag_resolve(
            user_id="alice", bag_id=spelled[DECOMPOSED], keep=[kept], reason="re-measured", reviewer="rita"
        )
        conflict_skip(reviewer="remy", user_id="alice", bag_id=spelled[COMPOSED], note="later")
        assert claim_bag(reviewer="rita", user_id="alice", bag_id=spelled[COMPOSED])
    regroup()
    merged = bag_id("alice", Scope(**env(COMPOSED)))
    assert set(Deposit.objects.values_list("bag_id", flat=True)) == {merged}
    assert Resolution.objects.get(deposit_id=resolution.deposit.id).bag_id == merged
    assert list(ReviewSkip.objects.values_list("reviewer", "bag_id")) == [("remy", merged)]
    assert list(ReviewClaim.objects.values_list("reviewer", "bag_id")) == [("rita", merged)]
    # The composed bag's conflict goes on: its episode stays the one open; the resolved one stays closed.
    assert ConflictEpisode.objects.get(ended_at__isnull=True).pk == first.pk
    assert ConflictEpisode.objects.filter(bag_id=merged).count() == 2
    assert api.get(f"/users/alice/deposits/{lost}").body["superseded_by"] == [resolution.deposit.id]
    assert_bags_match_a_recount()
