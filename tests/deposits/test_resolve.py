"""Resolving a bag: one human_review deposit that keeps some claims and supersedes the rest."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from atlaso_site.lib.errors import AtlasoError
from deposits.models import ConflictEpisode, Contradiction, Deposit, ScopeBag
from deposits.selectors.bags import conflict_queue
from deposits.selectors.deposits import deposit_detail
from deposits.selectors.recall import recall
from deposits.services.review import bag_resolve
from tests.deposits.scenario import NARROW, correct, put

pytestmark = pytest.mark.django_db


def split_bag() -> tuple[str, str, str, str]:
    """alice's bag: two positive claims (observed, verified) and one negative; returns their ids."""
    a = put("positive", "threshold 0.7 holds", evidence_grade="observed", artifact_refs=["s3://a"])
    b = put("positive", "threshold 0.7 holds again", artifact_refs=["s3://b"])
    c = put("negative", "threshold 0.7 fails")
    return Deposit.objects.get(pk=a).bag_id, a, b, c


def test_resolving_writes_one_human_review_deposit_that_supersedes_the_other_side():
    bag_id, a, b, c = split_bag()
    result = bag_resolve(
        user_id="alice", bag_id=bag_id, keep=[a, b], reason="re-measured: it holds", reviewer="rita"
    )
    written = deposit_detail("alice", result.id)
    assert (written.polarity, written.evidence_grade, written.channel) == (
        "positive",
        "verified",
        "human_review",
    )
    # With no `holds` given, what holds is what the kept deposits say; the reason is the edges'.
    assert (written.author, written.author_role, written.content) == (
        "rita",
        "reviewer",
        "threshold 0.7 holds\nthreshold 0.7 holds again",
    )
    assert written.contradicts == (c,)
    assert list(Contradiction.objects.filter(new_deposit_id=result.id).values_list("reason", flat=True)) == [
        "re-measured: it holds"
    ]
    assert list(written.artifact_refs) == ["s3://a", "s3://b"]
    assert {f: getattr(written.scope, f) for f in NARROW} == NARROW
    assert Deposit.objects.get(pk=result.id).bag_id == bag_id
    assert not ScopeBag.objects.filter(pk=bag_id).in_conflict().exists()
    episode = ConflictEpisode.objects.get(bag_id=bag_id)
    assert (episode.ended_by, str(episode.ended_by_deposit_id)) == ("supersession", result.id)


def test_the_claim_that_holds_is_recalled_and_the_reason_is_not():
    bag_id, a, b, c = split_bag()
    result = bag_resolve(
        user_id="alice",
        bag_id=bag_id,
        keep=[a],
        reason="Oat milk asked for twice; the dairy remark was about a guest",
        holds="  threshold 0.7 holds on the fixed eval set ",
        reviewer="rita",
    )
    written = deposit_detail("alice", result.id)
    assert written.content == "threshold 0.7 holds on the fixed eval set"
    why = "Oat milk asked for twice; the dairy remark was about a guest"
    edges = Contradiction.objects.filter(new_deposit_id=result.id).values_list("old_deposit_id", "reason")
    assert sorted((str(old), reason) for old, reason in edges) == sorted([(b, why), (c, why)])
    hits = recall(user_id="alice", query="dairy remark guest", facets={}, limit=10)
    assert [hit.deposit.id for hit in hits] == []
    hits = recall(user_id="alice", query="fixed eval set", facets={}, limit=10)
    assert [hit.deposit.content for hit in hits] == ["threshold 0.7 holds on the fixed eval set"]


def test_a_side_kept_whole_holds_its_deposits_contents_each_once():
    bag_id, *_ = split_bag()
    put("positive", "threshold 0.7 holds", evidence_grade="observed")  # the same words again
    result = bag_resolve(user_id="alice", bag_id=bag_id, side="positive", reason="both runs", reviewer="rita")
    assert deposit_detail("alice", result.id).content == "threshold 0.7 holds\nthreshold 0.7 holds again"


def test_what_holds_longer_than_a_claim_may_be_is_refused_on_holds():
    bag_id, a, *_ = split_bag()
    with pytest.raises(AtlasoError) as refused:
        bag_resolve(user_id="alice", bag_id=bag_id, keep=[a], reason="why", holds="x" * 8001, reviewer="rita")
    assert refused.value.details["field"] == "holds"
    assert Deposit.objects.filter(channel="human_review").count() == 0


def test_kept_deposits_that_disagree_write_nothing():
    bag_id, a, _, c = split_bag()
    with pytest.raises(AtlasoError) as refused:
        bag_resolve(user_id="alice", bag_id=bag_id, keep=[a, c], reason="both?", reviewer="rita")
    assert refused.value.details["field"] == "keep"
    assert "disagree" in refused.value.message
    assert Deposit.objects.count() == 3


def test_keeping_nothing_is_refused():
    bag_id, *_ = split_bag()
    with pytest.raises(AtlasoError, match="at least one"):
        bag_resolve(user_id="alice", bag_id=bag_id, keep=[], reason="x", reviewer="rita")


def test_a_bag_resolved_meanwhile_is_reported_as_already_resolved():
    bag_id, a, _, c = split_bag()
    bag_resolve(user_id="alice", bag_id=bag_id, keep=[a], reason="first", reviewer="rita")
    with pytest.raises(AtlasoError) as second:
        bag_resolve(user_id="alice", bag_id=bag_id, keep=[c], reason="second", reviewer="sam")
    assert second.value.code == "already_resolved"
    assert Deposit.objects.filter(channel="human_review").count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_at_once_write_one_resolution(on_postgres):
    bag_id, a, _, c = split_bag()
    outcomes: list[str] = []
    start = threading.Barrier(2)

    def resolve(keep: str, who: str) -> None:
        start.wait()
        try:
            bag_resolve(user_id="alice", bag_id=bag_id, keep=[keep], reason=f"{who} decided", reviewer=who)
            outcomes.append("resolved")
        except AtlasoError as error:
            outcomes.append(error.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=resolve, args=args) for args in ((a, "rita"), (c, "sam"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes) == ["already_resolved", "resolved"]
    assert Deposit.objects.filter(channel="human_review").count() == 1


def test_the_queue_lists_open_conflicts_oldest_first_with_a_preview(django_assert_max_num_queries):
    bags = []
    for env in ("a", "b", "c"):
        put("positive", f"{env} holds", {**NARROW, "env": env}, user=f"tenant-x:{env}")
        negative = put("negative", f"{env} fails", {**NARROW, "env": env}, user=f"tenant-x:{env}")
        bags.append(Deposit.objects.get(pk=negative).bag_id)
    put("positive", "other holds", user="zed")
    put("negative", "other fails", user="zed")
    with django_assert_max_num_queries(5):
        page = conflict_queue(owner_prefix="tenant-x:", limit=2)
        items = list(page.items)
    assert (page.total, [item.bag.bag_id for item in items]) == (3, bags[:2])
    assert [d.polarity for d in items[0].deposits] == ["negative", "positive"]
    assert (items[0].more, items[0].user_id) == (0, "tenant-x:a")
    assert [
        item.bag.bag_id for item in conflict_queue(owner_prefix="tenant-x:", limit=2, offset=2).items
    ] == bags[2:]
    assert conflict_queue().total == 4


@pytest.mark.django_db(transaction=True)
def test_an_agent_correcting_a_claim_while_a_reviewer_resolves_its_bag_never_deadlocks(
    on_postgres, monkeypatch
):
    """A resolution and an agent's correction in the same bag both end with an answer, not a deadlock.

    The reviewer's resolution is paused right after it looked at the bag; meanwhile an agent
    corrects one of the bag's claims. A deadlock would answer 503.
    """
    from deposits.services import review as services

    bag_id, a, _, c = split_bag()
    inside, failures = threading.Event(), []
    looked = services.stats_of

    def slow_look(bag):  # the reviewer holds what it has locked so far, and waits
        inside.set()
        threading.Event().wait(1.0)
        return looked(bag)

    monkeypatch.setattr(services, "stats_of", slow_look)

    def run(task) -> None:
        try:
            task()
        except AtlasoError:
            pass  # a refusal is an answer
        except Exception as error:  # a deadlock surfaces as a database error
            failures.append(repr(error))
        finally:
            connection.close()

    reviewer = threading.Thread(
        target=run,
        args=(
            lambda: bag_resolve(user_id="alice", bag_id=bag_id, keep=[a], reason="it holds", reviewer="rita"),
        ),
    )
    agent = threading.Thread(
        target=run, args=(lambda: inside.wait(10) and correct([c], "it holds, says the agent"),)
    )
    reviewer.start()
    agent.start()
    reviewer.join(30)
    agent.join(30)
    assert failures == []
    assert Deposit.objects.filter(channel="human_review").count() == 1
