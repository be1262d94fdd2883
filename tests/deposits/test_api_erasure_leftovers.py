"""Erasure takes everything of the erased deposit with it.

A bag it emptied reads as one never written (its scope values gone from the API, the admin and every
table), and the artifact refs a resolution deposit copied from it leave that deposit too.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.apps import apps
from django.db import connection

from deposits.models import ConflictEpisode, Deposit, ResolutionKept, ScopeBag
from deposits.services.review import bag_resolve
from tests.deposits.recount import assert_bags_match_a_recount
from tests.deposits.test_api_erasure_tombstones import embedding_rows, erase, rows_holding

# Scope values no other row holds: finding one anywhere after the erasure is a leftover.
SCOPE = {"model": "Quokkaberg-7b", "dataset": "wallaroo-interviews", "env": "prod", "n": 41}


def add(client, content: str, polarity: str = "open", user: str = "alice", **fields: Any) -> str:
    body = {"content": content, "polarity": polarity, "scope": SCOPE, **fields}
    if polarity != "open":
        body |= {"evidence_grade": "verified", "artifact_refs": body.get("artifact_refs", ["s3://runs/1"])}
    answer = client.post(f"/users/{user}/deposits", body)
    assert answer.status == 201, answer.body
    return answer.body["deposit"]["id"]


def bag_of(client, deposit_id: str, user: str = "alice") -> str:
    (item,) = [
        bag
        for bag in client.get(f"/users/{user}/bags").body["items"]
        if bag["scope"]["model"] == SCOPE["model"]
    ]
    assert client.get(f"/users/{user}/bags/{item['bag_id']}").body["deposits"][0]["id"] == deposit_id
    return item["bag_id"]


def test_a_bag_emptied_by_erasing_its_last_deposit_reads_as_never_written(eraser, admin_client):
    deposit = add(eraser, "Alice's interview notes")
    bag = bag_of(eraser, deposit)
    assert "wallaroo-interviews" in admin_client.get("/admin/deposits/scopebag/").content.decode()
    erase(eraser, deposit)
    answer = eraser.get(f"/users/alice/bags/{bag}")
    assert (answer.status, answer.body["error"]["code"]) == (404, "not_found")
    assert eraser.get("/users/alice/bags").body["total"] == 0
    assert "wallaroo-interviews" not in admin_client.get("/admin/deposits/scopebag/").content.decode()
    assert rows_holding("Quokkaberg") == []
    assert rows_holding("wallaroo") == []
    assert embedding_rows(deposit) == []


def test_erasing_both_sides_of_a_conflict_leaves_no_bag_episode_or_open_conflict(eraser):
    first = add(eraser, "threshold 0.7 holds", "positive")
    second = add(eraser, "threshold 0.7 fails", "negative")
    bag = bag_of(eraser, second)
    assert eraser.get(f"/users/alice/bags/{bag}").body["has_disagreement"]
    assert ConflictEpisode.objects.filter(bag_id=bag, ended_at__isnull=True).exists()
    erase(eraser, first)
    assert eraser.get(f"/users/alice/bags/{bag}").status == 200  # the other deposit still holds it
    erase(eraser, second)
    assert eraser.get(f"/users/alice/bags/{bag}").status == 404
    assert not ScopeBag.objects.exists() and not ConflictEpisode.objects.exists()
    assert_bags_match_a_recount()
    assert rows_holding("wallaroo") == []


def test_a_bag_that_still_holds_a_retracted_deposit_keeps_its_scope(eraser):
    retracted = add(eraser, "Alice's first notes")
    erased = add(eraser, "Alice's second notes")
    bag = bag_of(eraser, erased)
    eraser.delete(f"/users/alice/deposits/{retracted}?reason=wrong")
    erase(eraser, erased)
    # The retracted deposit stays readable for audit, scope and all; so does its bag.
    answer = eraser.get(f"/users/alice/bags/{bag}")
    assert (answer.status, answer.body["scope"]["dataset"], answer.body["size"]) == (
        200,
        "wallaroo-interviews",
        0,
    )
    assert eraser.get(f"/users/alice/deposits/{retracted}").body["scope"]["dataset"] == "wallaroo-interviews"


def test_the_same_scope_written_again_after_the_erasure_makes_the_bag_again(eraser):
    erased = add(eraser, "Alice's interview notes")
    bag = bag_of(eraser, erased)
    erase(eraser, erased)
    again = add(eraser, "Alice's new notes")
    answer = eraser.get(f"/users/alice/bags/{bag}")
    assert answer.status == 200, answer.body
    assert (answer.body["size"], [d["id"] for d in answer.body["deposits"]]) == (1, [again])
    assert answer.body["scope"]["model"] == SCOPE["model"]
    assert_bags_match_a_recount()


def resolve_keeping(eraser, kept: list[str], overruled: list[str]) -> str:
    bag = Deposit.objects.get(pk=overruled[0]).bag_id
    result = bag_resolve(user_id="alice", bag_id=bag, keep=kept, reason="re-measured", reviewer="rita")
    return result.deposit.id


def test_erasing_a_kept_deposit_takes_the_refs_it_alone_gave_the_resolution(eraser):
    secret = add(
        eraser, "holds on run 9", "positive", artifact_refs=["s3://runs/Numbat-9", "s3://runs/shared"]
    )
    other = add(eraser, "holds on run 3", "positive", artifact_refs=["s3://runs/shared", "s3://runs/3"])
    loser = add(eraser, "fails", "negative", artifact_refs=["s3://runs/lost"])
    resolution = resolve_keeping(eraser, [secret, other], [loser])
    before = eraser.get(f"/users/alice/deposits/{resolution}").body["artifact_refs"]
    assert before == ["s3://runs/Numbat-9", "s3://runs/shared", "s3://runs/3"]
    erase(eraser, secret)
    answer = eraser.get(f"/users/alice/deposits/{resolution}")
    assert answer.status == 200, answer.body
    # What the other kept deposit gave stays, in its order; what only the erased one gave goes.
    assert answer.body["artifact_refs"] == ["s3://runs/shared", "s3://runs/3"]
    assert rows_holding("Numbat") == []
    erase(eraser, other)
    assert eraser.get(f"/users/alice/deposits/{resolution}").body["artifact_refs"] == []
    # The resolution still holds: the deposit it overruled stays superseded.
    assert eraser.get(f"/users/alice/deposits/{loser}").body["superseded_by"] == [resolution]


def test_erasing_the_resolution_deposit_itself_leaves_the_kept_deposits_as_they_were(eraser):
    kept = add(eraser, "holds on run 9", "positive", artifact_refs=["s3://runs/9"])
    loser = add(eraser, "fails", "negative")
    resolution = resolve_keeping(eraser, [kept], [loser])
    erase(eraser, resolution)
    assert eraser.get(f"/users/alice/deposits/{kept}").body["artifact_refs"] == ["s3://runs/9"]
    assert eraser.get(f"/users/alice/deposits/{loser}").body["superseded_by"] == []
    assert_bags_match_a_recount()


class SchemaEditor:
    """What a migration's RunPython step uses of its schema editor, on the test's connection."""

    connection = connection

    def execute(self, sql: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute(sql)


def test_resolutions_written_before_kept_deposits_were_recorded_are_given_them(eraser):
    kept = add(eraser, "holds on run 9", "positive", artifact_refs=["s3://runs/Numbat-9"])
    also = add(eraser, "holds on run 3", "positive", artifact_refs=["s3://runs/3"])
    loser = add(eraser, "fails", "negative")
    resolution = resolve_keeping(eraser, [kept, also], [loser])
    later = add(eraser, "holds again", "positive", artifact_refs=["s3://runs/later"])
    ResolutionKept.objects.all().delete()  # as the resolutions before deposits/0026 stand
    migration = import_module("deposits.migrations.0026_erasure_takes_copied_refs")
    migration.forward(apps, SchemaEditor())
    recorded = set(ResolutionKept.objects.values_list("deposit_id", flat=True))
    assert {str(pk) for pk in recorded} == {kept, also}
    assert later not in recorded
    erase(eraser, kept)
    assert eraser.get(f"/users/alice/deposits/{resolution}").body["artifact_refs"] == ["s3://runs/3"]
