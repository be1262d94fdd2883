"""Every method of the client against a served Atlaso: what it returns, and the errors it raises.

The errors are those the server's answers become, and each result's to_dict() is exactly the
wire form the server sent.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest

from atlaso import (
    AddItem,
    AsyncMemory,
    AuthenticationError,
    DepositRejectedError,
    InputValidationError,
    Memory,
    MissingContradictsError,
    NotFoundError,
    PermissionDeniedError,
    Scope,
    SearchResults,
    idempotency_key,
)
from tests.client.served import ServedAtlaso

PROD = Scope(model="gpt-5", dataset="evals", env="prod")


def raw(served: ServedAtlaso, path: str, **params: Any) -> dict[str, Any]:
    """What the server sends for a GET, read without the client."""
    answer = httpx.get(
        f"{served.url}/api/v1{path}",
        params=params,
        headers={"Authorization": f"Bearer {served.keys['client-rw']}"},
    )
    answer.raise_for_status()
    return answer.json()


def conflict(user: Any) -> tuple[str, str]:
    yes = user.add("retries fix the flaky upload", polarity="positive", evidence_grade="observed", scope=PROD)
    no = user.add(
        "retries do not fix the flaky upload", polarity="negative", evidence_grade="observed", scope=PROD
    )
    return yes.id, no.id


def test_add_returns_the_stored_deposit_as_the_server_has_it(memory: Memory, owner: str, served):
    user = memory.for_user(owner)
    added = user.add(
        "threshold 0.7 over-flags",
        polarity="negative",
        evidence_grade="observed",
        scope=PROD,
        tags=["threshold"],
        artifact_refs=["run:42"],
        author="eval-bot",
        author_role="red-team",
        task_id="T-1",
    )
    assert not added.is_idempotent_replay
    deposit = added.deposit
    assert (deposit.user_id, deposit.polarity, deposit.scope) == (owner, "negative", PROD)
    assert (deposit.tags, deposit.artifact_refs, deposit.author_role) == (
        ("threshold",),
        ("run:42",),
        "red-team",
    )
    assert deposit.channel == "client-rw"
    assert deposit.created_at.tzinfo is not None
    assert user.get(deposit.id).to_dict() == raw(served, f"/users/{owner}/deposits/{deposit.id}")


def test_recall_to_dict_is_the_servers_answer_and_flags_cover_every_bag(memory: Memory, owner: str, served):
    user = memory.for_user(owner)
    conflict(user)
    for n in range(3):
        user.add(f"flaky upload note {n}", scope=Scope(model="gpt-5", dataset=f"d{n}"))
    results = user.recall("flaky upload", limit=1)
    assert len(results) == 1
    assert results.has_disagreement and not results.is_confident
    assert (results.bag_count, results.conflict_bag_count) == (4, 1)
    wire = raw(served, f"/users/{owner}/recall", q="flaky upload", limit=1)
    # The score decays with age, so the two reads differ in it alone; parsed, the wire reads back whole.
    assert SearchResults.from_wire(wire).to_dict() == wire
    assert [hit["id"] for hit in wire["items"]] == [hit.id for hit in results]
    assert results.explain() == wire["explain"] == "1 hit across 4 bags · 1 bag in conflict · not confident"


def test_a_scope_filter_compares_only_the_facets_given(memory: Memory, owner: str):
    user = memory.for_user(owner)
    conflict(user)
    user.add("flaky upload in staging", scope=Scope(env="staging"))
    assert {hit.scope.env for hit in user.recall("flaky upload", scope=Scope(env="prod"))} == {"prod"}
    assert {hit.scope.env for hit in user.recall("flaky upload", scope={"env": "staging"})} == {"staging"}


def test_contradict_supersedes_and_lands_in_the_same_bag(memory: Memory, owner: str):
    user = memory.for_user(owner)
    yes, no = conflict(user)
    fixed = user.contradict(
        "retries fix the upload once the timeout is 30 s", [yes, no], reason="re-measured", polarity="positive",
        evidence_grade="replicated",
    )  # fmt: skip
    assert fixed.deposit.scope == PROD
    assert set(fixed.deposit.contradicts) == {yes, no}
    assert user.get(yes).superseded_by == (fixed.id,)
    hits = user.recall("retries upload")
    assert [hit.id for hit in hits] == [fixed.id]
    assert not hits.has_disagreement
    assert {hit.id for hit in user.recall("retries upload", include_superseded=True)} == {yes, no, fixed.id}


def test_the_servers_refusals_become_the_documented_errors(memory: Memory, owner: str):
    user = memory.for_user(owner)
    with pytest.raises(DepositRejectedError) as gate:
        user.add("everything works", polarity="positive", evidence_grade="observed")
    assert gate.value.code == "gate_rejected" and gate.value.status_code == 422
    assert "replicated" in gate.value.gate_reason
    assert user.peek().total_count == 0

    unknown = str(uuid.uuid4())
    with pytest.raises(MissingContradictsError) as missing:
        user.contradict("better", [unknown], reason="because")
    assert missing.value.missing == (unknown,)

    with pytest.raises(InputValidationError) as invalid:
        user.add("x", scope=Scope(model=""))
    assert invalid.value.field == "scope.model" and invalid.value.status_code == 422

    with pytest.raises(NotFoundError) as not_found:
        user.get(unknown)
    assert not_found.value.status_code == 404 and not_found.value.code == "not_found"


def test_a_bad_key_and_a_confined_key_are_refused(served: ServedAtlaso, owner: str):
    with Memory(api_key="atl_not_a_key", base_url=served.url) as stranger, pytest.raises(AuthenticationError):
        stranger.for_user(owner).peek()
    with Memory(api_key=served.keys["client-tenant"], base_url=served.url) as tenant:
        assert tenant.for_user(f"tenant-a:{owner}").peek().total_count == 0
        with pytest.raises(PermissionDeniedError, match="tenant-a:"):
            tenant.for_user(owner).peek()


def test_retract_soft_keeps_it_for_audit_and_hard_needs_the_erase_permission(memory: Memory, owner, served):
    user = memory.for_user(owner)
    first = user.add("likes tea").id
    second = user.add("likes coffee").id
    soft = user.retract(first, reason="said in jest")
    assert (soft.deposit_id, soft.mode) == (first, "soft")
    kept = user.get(first)
    assert kept.retracted and kept.retracted_reason == "said in jest"
    assert [d.id for d in user.list_recent()] == [second]
    assert {d.id for d in user.list_recent(include_retracted=True)} == {first, second}

    with pytest.raises(PermissionDeniedError, match="erase"):
        user.retract(second, reason="GDPR request", hard_delete=True)
    with Memory(api_key=served.keys["client-erase"], base_url=served.url) as eraser:
        erased = eraser.for_user(owner).retract(second, reason="GDPR request", hard_delete=True)
    assert erased.mode == "hard"
    with pytest.raises(NotFoundError):
        user.get(second)


def test_list_recent_pages_and_iter_deposits_reads_every_one_once(memory: Memory, owner: str):
    user = memory.for_user(owner)
    written = [user.add(f"note {n}").id for n in range(7)]
    page = user.list_recent(limit=3, offset=2)
    assert (page.total, page.limit, page.offset, len(page)) == (7, 3, 2, 3)
    assert [d.id for d in page] == written[::-1][2:5]
    assert [d.id for d in user.iter_deposits(page_size=2)] == written[::-1]


def test_add_many_over_a_thousand_items_is_sent_in_batches_and_replays_after(memory: Memory, owner: str):
    user = memory.for_user(owner)
    items: list[Any] = [
        AddItem(content=f"row {n}", idempotency_key=idempotency_key("import", owner, n)) for n in range(1205)
    ]
    items[1100] = {
        "content": "every row works",
        "polarity": "positive",
        "idempotency_key": idempotency_key("bad", owner),
    }
    result = user.add_many(items)
    assert (len(result.committed), len(result.duplicates), result.total) == (1204, 0, 1205)
    (reject,) = result.failed
    assert reject.index == 1100 and reject.item.content == "every row works"
    assert isinstance(reject.error, DepositRejectedError)
    assert result.is_partial and not result.all_succeeded
    again = user.add_many(items[:1100])
    assert (len(again.committed), len(again.duplicates), again.all_succeeded) == (0, 1100, True)
    assert user.peek().total_count == 1204


def test_add_many_refuses_a_keyless_item_and_an_abort_too_big_for_one_request(memory: Memory, owner: str):
    user = memory.for_user(owner)
    with pytest.raises(InputValidationError, match="idempotency_key"):
        user.add_many([{"content": "no key"}])
    with pytest.raises(InputValidationError, match="abort"):
        user.add_many(
            [AddItem(content=f"r{n}", idempotency_key=f"k{n}") for n in range(1001)], on_gate_reject="abort"
        )
    aborted = user.add_many(
        [AddItem(content="ok", idempotency_key="k-ok"), AddItem(content="all good", polarity="positive",
                                                               idempotency_key="k-bad")],
        on_gate_reject="abort",
    )  # fmt: skip
    assert aborted.committed == () and len(aborted.failed) == 1
    assert user.peek().total_count == 0


def test_health_peek_and_bags_describe_the_memory(memory: Memory, owner: str, served):
    user = memory.for_user(owner)
    conflict(user)
    user.add(
        "retries help", polarity="positive", evidence_grade="observed", scope=Scope(model="m", dataset="d")
    )
    user.add(
        "retries help again",
        polarity="positive",
        evidence_grade="observed",
        scope=Scope(model="m", dataset="d"),
    )
    diagnostics = user.health(window_days=7)
    assert diagnostics.to_dict() == raw(served, f"/users/{owner}/health", window_days=7)
    assert diagnostics.deposit_count == 4 and diagnostics.window_days == 7

    view = user.peek(limit=2)
    assert (view.total_count, len(view.deposits), view.has_recent_disagreements) == (4, 2, True)
    assert [d.content for d in view] == ["retries help again", "retries help"]

    bags = user.bags(conflict=True)
    (summary,) = bags
    assert summary.scope == Scope(model="gpt-5", dataset="evals", env="prod")
    assert dict(summary.counts) == {"positive": 1, "negative": 1, "cautionary": 0, "open": 0}
    assert bags.to_dict() == raw(served, f"/users/{owner}/bags", conflict="true")
    bag = user.bag(summary.bag_id)
    assert {(d.polarity, d.state) for d in bag.deposits} == {("positive", "live"), ("negative", "live")}
    assert user.bags(scope={"model": "m"}).total == 1


def test_beliefs_observe_and_read_back(memory: Memory, owner: str):
    user = memory.for_user(owner)
    revision = user.observe("drink", "tea", content_confidence=0.9, source_id="chat-1")
    assert (revision.belief_key, revision.value, revision.channel, revision.source_id) == (
        "drink",
        "tea",
        "client-rw",
        "chat-1",
    )
    assert revision.verdict is not None and revision.verdict.fact == "tea"
    verdict = user.belief("drink")
    assert verdict.fact == "tea" and 0 < verdict.probability <= 1
    assert [v.belief_key for v in user.beliefs()] == ["drink"]
    with pytest.raises(NotFoundError):
        user.belief("never-seen")


def test_a_deposit_carrying_a_belief_shows_the_verdict_on_its_hit(memory: Memory, owner: str):
    user = memory.for_user(owner)
    user.add("Alice drinks oat milk", belief={"key": "milk", "value": "oat"})
    (hit,) = user.recall("oat milk")
    assert hit.deposit.belief is not None and hit.deposit.belief.key == "milk"
    assert hit.belief is not None and hit.belief.belief_key == "milk" and hit.belief.value == "oat"


def test_memory_methods_name_the_owner_with_user_id(memory: Memory, owner: str):
    added = memory.add("likes tea", user_id=owner)
    assert memory.get(added.id, user_id=owner).content == "likes tea"
    assert memory.recall("tea", user_id=owner)[0].id == added.id
    assert memory.peek(user_id=owner).total_count == 1


def test_key_info_describes_the_calling_key(memory: Memory):
    info = memory.key_info()
    assert (info.name, info.channel, info.tier, info.permissions, info.user_prefix) == (
        "client-rw", "client-rw", "agent_own", ("read", "write"), "")  # fmt: skip


def test_calls_reuse_one_kept_alive_connection(memory: Memory, owner: str):
    user = memory.for_user(owner)
    for _ in range(5):
        user.peek()
    pool = memory._http._transport._pool  # type: ignore[union-attr]
    assert len(pool.connections) == 1


def test_the_async_client_does_the_same_against_the_server(client_env: ServedAtlaso, owner: str):
    async def main() -> None:
        async with AsyncMemory() as m:
            user = m.for_user(owner)
            yes, no = conflict_ids = await asyncio.gather(
                user.add(
                    "retries fix the flaky upload", polarity="positive", evidence_grade="observed", scope=PROD
                ),
                user.add("retries do not fix it", polarity="negative", evidence_grade="observed", scope=PROD),
            )
            results = await user.recall("retries")
            assert results.has_disagreement and {h.id for h in results} == {yes.id, no.id}
            bulk = await user.add_many([AddItem(content=f"a{n}", idempotency_key=f"a{n}") for n in range(3)])
            assert len(bulk.committed) == 3
            assert len([d async for d in user.iter_deposits(page_size=2)]) == 5
            assert (await m.health(user_id=owner)).deposit_count == 5
            with pytest.raises(DepositRejectedError):
                await user.add("all is well", polarity="positive")
            assert len(conflict_ids) == 2

    asyncio.run(main())


def test_every_reads_wire_form_reads_back_whole(memory: Memory, owner: str, served):
    from atlaso import (
        ApiKeyInfo,
        Bag,
        BagPage,
        BeliefPage,
        BeliefRevision,
        BeliefVerdict,
        DepositPage,
        PeekView,
    )

    user = memory.for_user(owner)
    yes, _ = conflict(user)
    user.contradict(
        "retries fix it with a 30 s timeout", [yes], reason="re-measured", evidence_grade="observed"
    )
    user.add("Alice drinks oat milk", belief={"key": "milk", "value": "oat"})
    user.observe("milk", "soy", source_id="chat-7")
    bag_id = next(bag.bag_id for bag in user.bags() if bag.size > 1)
    reads = {
        f"/users/{owner}/recall?q=oat+milk+retries": SearchResults,
        f"/users/{owner}/deposits?include_retracted=true": DepositPage,
        f"/users/{owner}/peek": PeekView,
        f"/users/{owner}/bags": BagPage,
        f"/users/{owner}/bags/{bag_id}": Bag,
        f"/users/{owner}/beliefs": BeliefPage,
        f"/users/{owner}/beliefs/milk": BeliefVerdict,
        "/keys/me": ApiKeyInfo,
    }
    for path, kind in reads.items():
        base, _, query = path.partition("?")
        wire = raw(
            served, base, **dict(pair.split("=") for pair in query.replace("+", " ").split("&") if pair)
        )
        if base.endswith("recall"):
            assert any(item["belief"] for item in wire["items"]), "a hit carries its belief"
        assert kind.from_wire(wire).to_dict() == wire, path
    for revision in raw(served, f"/users/{owner}/beliefs/milk/revisions")["items"]:
        assert BeliefRevision.from_wire(revision).to_dict() == revision


def test_recall_sends_its_mode_and_a_server_without_an_embedder_refuses_meaning(
    memory: Memory, client_env: ServedAtlaso, owner: str
):
    """The suite serves Atlaso with ATLASO_EMBEDDER=none: words answer, meaning is refused."""
    from atlaso import EmbedderUnavailableError

    user = memory.for_user(owner)
    user.add("retries fix the flaky upload")
    hits = user.recall("flaky upload", mode="words")
    assert [hit.matched_by for hit in hits] == ["words"]
    assert [hit.id for hit in memory.recall("flaky upload", user_id=owner, mode="words")] == [
        hit.id for hit in hits
    ]
    for mode in ("meaning", "hybrid"):
        with pytest.raises(EmbedderUnavailableError, match="needs an embedder") as refused:
            user.recall("flaky upload", mode=mode)  # type: ignore[arg-type]
        assert (refused.value.status_code, refused.value.field) == (422, "mode")
    with pytest.raises(InputValidationError, match="mode must be one of"):
        user.recall("flaky upload", mode="vibes")  # type: ignore[arg-type]

    async def main() -> None:
        async with AsyncMemory() as m:
            found = await m.for_user(owner).recall("flaky upload", mode="words")
            assert [hit.matched_by for hit in found] == ["words"]
            with pytest.raises(EmbedderUnavailableError):
                await m.recall("flaky upload", user_id=owner, mode="meaning")

    asyncio.run(main())
