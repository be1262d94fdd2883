"""LangGraph's store over a served Atlaso: `AtlasoStore` and `AsyncAtlasoStore`, on `langgraph`.

Modelled on LangGraph's own store tests (libs/checkpoint-sqlite's test_store.py: batch order,
batched gets, puts, searches and namespace listings, basic ops, segment boundaries), then what
Atlaso adds: history, recall's flags, the mapping's refusals, the number of requests a batch
costs, and a compiled graph whose node writes and reads memory.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, TypedDict

import httpx
import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

from atlaso import AsyncMemory, Memory
from atlaso.integrations.langgraph import AsyncAtlasoStore, AtlasoStore
from tests.client.served import ServedAtlaso

PROD = {"model": "gpt-5", "dataset": "evals", "env": "prod"}


class Counting(httpx.HTTPTransport):
    """The real transport, counting the requests it sends (what a batch costs)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(f"{request.method} {request.url.path}")
        return super().handle_request(request)


class AsyncCounting(httpx.AsyncHTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(f"{request.method} {request.url.path}")
        return await super().handle_async_request(request)


@pytest.fixture
def memory(served: ServedAtlaso) -> Any:
    with Memory(api_key=served.keys["client-rw"], base_url=served.url) as m:
        yield m


@pytest.fixture
def store(memory: Memory) -> AtlasoStore:
    return AtlasoStore(memory)


def counted(served: ServedAtlaso) -> tuple[AtlasoStore, Counting]:
    transport = Counting()
    return AtlasoStore(
        Memory(api_key=served.keys["client-rw"], base_url=served.url, transport=transport)
    ), transport


# ---- LangGraph's own store tests, with values a deposit can hold ------------------------------


def test_batch_order(store: AtlasoStore, owner: str):
    store.put((owner, "foo"), "key1", {"content": "value1"})
    store.put((owner, "bar"), "key2", {"content": "value2"})
    results = store.batch([
        GetOp(namespace=(owner, "foo"), key="key1"),
        PutOp(namespace=(owner, "bar"), key="key2", value={"content": "value2"}),
        SearchOp(namespace_prefix=(owner,), filter={"content": "value1"}, limit=10, offset=0),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", (owner,)),), max_depth=None, limit=10, offset=0),
        GetOp(namespace=(owner,), key="key3"),
    ])  # fmt: skip
    assert len(results) == 5
    assert isinstance(results[0], Item)
    assert (results[0].key, results[0].namespace, results[0].value["content"]) == (
        "key1",
        (owner, "foo"),
        "value1",
    )
    assert results[1] is None
    assert [item.key for item in results[2]] == ["key1"]
    assert set(results[3]) == {(owner, "foo"), (owner, "bar")}
    assert results[4] is None

    reordered = store.batch([
        SearchOp(namespace_prefix=(owner,), filter=None, limit=5, offset=0),
        GetOp(namespace=(owner, "bar"), key="key2"),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", (owner,)),), max_depth=None, limit=5, offset=0),
        PutOp(namespace=(owner,), key="key3", value={"content": "value3"}),
        GetOp(namespace=(owner, "foo"), key="key1"),
    ])  # fmt: skip
    assert len(reordered[0]) == 2
    assert reordered[1].value["content"] == "value2" and reordered[1].namespace == (owner, "bar")
    assert reordered[3] is None
    assert reordered[4].value["content"] == "value1"
    assert store.get((owner,), "key3").value["content"] == "value3"


def test_batch_get_ops(store: AtlasoStore, owner: str):
    store.put((owner,), "key1", {"content": "value1"})
    store.put((owner,), "key2", {"content": "value2"})
    results = store.batch([GetOp((owner,), "key1"), GetOp((owner,), "key2"), GetOp((owner,), "key3")])
    assert [r.key if r else None for r in results] == ["key1", "key2", None]


def test_batch_put_ops(store: AtlasoStore, owner: str):
    results = store.batch([
        PutOp((owner,), "key1", {"content": "value1"}),
        PutOp((owner,), "key2", {"content": "value2"}),
        PutOp((owner,), "key3", None),
    ])  # fmt: skip
    assert results == [None, None, None]
    assert store.get((owner,), "key1").value["content"] == "value1"
    assert store.get((owner,), "key2").value["content"] == "value2"
    assert store.get((owner,), "key3") is None


def test_batch_search_ops(store: AtlasoStore, owner: str):
    for namespace, key, value in (
        ((owner, "foo"), "key1", {"content": "value1", "tags": ["a"]}),
        ((owner, "bar"), "key2", {"content": "value2", "tags": ["a"]}),
        ((owner, "baz"), "key3", {"content": "value3", "tags": ["b"]}),
    ):
        store.put(namespace, key, value)
    tagged, first_two, foo = store.batch([
        SearchOp(namespace_prefix=(owner,), filter={"tags": ["a"]}, limit=10, offset=0),
        SearchOp(namespace_prefix=(owner,), filter=None, limit=2, offset=0),
        SearchOp(namespace_prefix=(owner, "foo"), filter=None, limit=10, offset=0),
    ])  # fmt: skip
    assert sorted(item.key for item in tagged) == ["key1", "key2"]
    assert len(first_two) == 2
    assert [item.namespace for item in foo] == [(owner, "foo")]


def test_batch_list_namespaces_ops(store: AtlasoStore, owner: str):
    namespaces = [
        (owner, "documents", "public"),
        (owner, "documents", "private"),
        (owner, "images", "public"),
    ]
    for n, namespace in enumerate(namespaces):
        store.put(namespace, f"doc{n}", {"content": f"document {n}"})
    prefix = MatchCondition("prefix", (owner,))
    every, shallow, public = store.batch([
        ListNamespacesOp(match_conditions=(prefix,), max_depth=None, limit=10, offset=0),
        ListNamespacesOp(match_conditions=(prefix,), max_depth=2, limit=10, offset=0),
        ListNamespacesOp(match_conditions=(prefix, MatchCondition("suffix", ("public",))), limit=10, offset=0),
    ])  # fmt: skip
    assert set(every) == set(namespaces)
    assert set(shallow) == {(owner, "documents"), (owner, "images")}
    assert set(public) == {(owner, "documents", "public"), (owner, "images", "public")}


def test_basic_store_ops(store: AtlasoStore, owner: str):
    namespace = (owner, "documents")
    assert store.search((owner,)) == []
    store.put(namespace, "doc1", {"content": "Hello, World!", "tags": ["greeting"]})
    item = store.get(namespace, "doc1")
    assert (item.namespace, item.key) == (namespace, "doc1")
    assert item.value == {"content": "Hello, World!", "polarity": "open", "evidence_grade": "anecdotal",
                          "tags": ["greeting"]}  # fmt: skip
    store.put(namespace, "doc1", {"content": "Hello, LangGraph!"})
    updated = store.get(namespace, "doc1")
    assert updated.value["content"] == "Hello, LangGraph!" and updated.updated_at >= item.updated_at
    assert store.get((owner, "other_documents"), "doc1") is None
    store.put(namespace, "doc2", {"content": "Greetings!"})
    assert {i.key for i in store.search((owner, "documents"), limit=10)} == {"doc1", "doc2"}
    assert (owner, "documents") in store.list_namespaces(prefix=(owner,))
    store.delete(namespace, "doc1")
    store.delete(namespace, "doc2")
    assert store.get(namespace, "doc1") is None and store.get(namespace, "doc2") is None
    assert store.search((owner, "documents"), limit=10) == []
    assert store.list_namespaces(prefix=(owner,)) == []


def test_list_namespaces_operations(store: AtlasoStore, owner: str):
    namespaces = [
        (owner, "test", "documents", "public", "end"),
        (owner, "test", "documents", "private", "end"),
        (owner, "test", "images", "public", "end"),
        (owner, "test", "images", "private", "end"),
        (owner, "prod", "documents", "public", "end"),
        (owner, "prod", "documents", "some", "nesting", "public", "end"),
        (owner, "prod", "documents", "private", "end"),
    ]
    store.batch([PutOp(namespace, "dummy", {"content": "dummy"}) for namespace in namespaces])
    assert len(store.list_namespaces(prefix=(owner, "test"))) == 4
    assert len(store.list_namespaces(prefix=(owner, "test", "documents"))) == 2
    assert len(store.list_namespaces(prefix=(owner,), suffix=("public", "end"))) == 4
    assert len(store.list_namespaces(prefix=(owner, "test"), suffix=("public", "end"))) == 2
    assert len(store.list_namespaces(prefix=(owner, "*", "documents"))) == 5
    assert len(store.list_namespaces(prefix=(owner,), suffix=("*", "public", "end"))) == 4
    assert store.list_namespaces(prefix=(owner,), suffix=("some", "*", "public", "end")) == [namespaces[5]]
    assert all(len(ns) <= 3 for ns in store.list_namespaces(prefix=(owner,), max_depth=3))
    assert len(store.list_namespaces(prefix=(owner,), limit=3)) == 3
    assert len(store.list_namespaces(prefix=(owner,), offset=3)) == len(namespaces) - 3
    assert set(store.list_namespaces(prefix=(owner,))) == set(namespaces)


def test_search_items(store: AtlasoStore, owner: str):
    items = {
        (owner, "documents", "user1"): {"content": "Doc 1", "author": "John Doe", "tags": ["important"]},
        (owner, "documents", "user2"): {"content": "Doc 2", "author": "Jane Smith", "tags": ["draft"]},
        (owner, "reports", "department1"): {"content": "Report A", "author": "John Doe", "tags": ["final"]},
        (owner, "reports", "department2"): {
            "content": "Report B",
            "author": "Alice Johnson",
            "tags": ["draft"],
        },
    }
    store.batch([PutOp(namespace, f"item_{namespace[-1]}", value) for namespace, value in items.items()])
    assert {i.namespace[1] for i in store.search((owner, "documents"))} == {"documents"}
    assert len(store.search((owner, "reports"))) == 2
    first, second = store.search((owner,), limit=2, offset=0), store.search((owner,), limit=2, offset=2)
    assert len(first) == len(second) == 2 and {i.key for i in first}.isdisjoint({i.key for i in second})
    assert {i.value["author"] for i in store.search((owner,), filter={"author": "John Doe"})} == {"John Doe"}
    assert len(store.search((owner,), filter={"tags": ["draft"]})) == 2
    assert len(store.search((owner,), filter={"author": {"$ne": "John Doe"}})) == 2


def test_search_namespace_segment_boundary(store: AtlasoStore, owner: str):
    for namespace in [(owner, "foo"), (owner, "foo", "child"), (owner, "foobar"), (owner, "foo2")]:
        store.put(namespace, "k", {"content": "v"})

    def namespaces(prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
        return {item.namespace for item in store.search(prefix, limit=100)}

    assert namespaces((owner, "foo")) == {(owner, "foo"), (owner, "foo", "child")}
    assert namespaces((owner, "foobar")) == {(owner, "foobar")}
    assert namespaces((owner, "fo")) == set()
    assert set(store.list_namespaces(prefix=(owner, "foo"))) == {(owner, "foo"), (owner, "foo", "child")}


# ---- What Atlaso adds -----------------------------------------------------------------------


def test_a_put_on_a_live_key_contradicts_it_and_the_old_value_stays_as_history(
    store: AtlasoStore, memory: Memory, owner: str
):
    namespace = (owner, "preferences")
    store.put(namespace, "drink", {"content": "Alice drinks black coffee"})
    store.put(namespace, "drink", {"content": "Alice switched to green tea", "author": "chat"})
    assert store.get(namespace, "drink").value["content"] == "Alice switched to green tea"
    user = memory.for_user(owner)
    history = user.recall("Alice", include_superseded=True)
    by_content = {hit.content: hit for hit in history}
    old, new = by_content["Alice drinks black coffee"], by_content["Alice switched to green tea"]
    assert old.superseded and not new.superseded
    assert user.get(old.id).superseded_by == (new.id,)
    assert new.deposit.contradicts == (old.id,)
    assert new.deposit.scope.note == "preferences" and "key:drink" in new.deposit.tags
    assert [hit.content for hit in user.recall("Alice")] == ["Alice switched to green tea"]


def test_delete_retracts_every_deposit_of_the_key_so_no_old_value_comes_back(
    store: AtlasoStore, memory: Memory, owner: str
):
    namespace = (owner, "preferences")
    for text in ("coffee", "tea", "water"):
        store.put(namespace, "drink", {"content": f"Alice drinks {text}"})
    store.put(namespace, "food", {"content": "Alice eats rice"})
    store.delete(namespace, "drink")
    assert store.get(namespace, "drink") is None
    assert store.get(namespace, "food").value["content"] == "Alice eats rice"
    every = memory.for_user(owner).list_recent(include_retracted=True)
    drinks = [d for d in every if "key:drink" in d.tags]
    assert len(drinks) == 3 and all(d.retracted for d in drinks)
    assert [hit.content for hit in memory.for_user(owner).recall("Alice")] == ["Alice eats rice"]


def test_search_with_a_query_is_recall_and_carries_its_flags(store: AtlasoStore, owner: str):
    store.put((owner, "ops"), "retries", {"content": "retries fix the flaky upload", "polarity": "positive",
                                          "evidence_grade": "observed", "scope": PROD})  # fmt: skip
    store.put((owner, "ops"), "no-retries", {"content": "retries do not fix the flaky upload",
                                             "polarity": "negative", "evidence_grade": "observed", "scope": PROD})  # fmt: skip
    store.put((owner, "other"), "upload", {"content": "the flaky upload is in another namespace"})
    found = store.search((owner, "ops"), query="flaky upload")
    assert {item.key for item in found} == {"retries", "no-retries"}
    for item in found:
        assert isinstance(item, SearchItem) and item.score and item.score > 0
        flags = item.value["atlaso"]
        assert flags["has_disagreement"] is True and flags["is_confident"] is False
        assert flags["bag_id"].startswith("bag_") and flags["id"]
        assert item.value["scope"] == PROD
    # Read back and put again: the flags are read-only and left out.
    store.put((owner, "ops"), "retries", found[0].value | {"content": "retries fix it, with backoff"})
    assert "atlaso" not in store.get((owner, "ops"), "retries").value


@pytest.mark.parametrize(
    ("namespace", "says"),
    [
        ((), "its first element is the memory owner"),
        (("bad id!", "x"), "its first element is the memory owner, and user_id must be"),
        (("alice", "a/b"), "cannot hold '/'"),
        (("alice", "x" * 2001), "at most 2000 characters"),
    ],
)
def test_a_namespace_that_cannot_map_is_refused_before_any_request(served: ServedAtlaso, namespace, says):
    store, transport = counted(served)
    with pytest.raises(InvalidNamespaceError, match=says.replace("(", r"\(")):
        store.batch([PutOp(namespace, "k", {"content": "v"})])
    assert transport.sent == []


def test_a_value_or_key_a_deposit_cannot_hold_and_an_ownerless_listing_are_refused(
    served: ServedAtlaso, owner: str
):
    store, transport = counted(served)
    with pytest.raises(
        ValueError, match="value has field 'data' that a deposit does not: a value takes content"
    ):
        store.put((owner,), "k", {"content": "v", "data": 1})
    with pytest.raises(ValueError, match="must be the memory's text"):
        store.put((owner,), "k", {"content": {"nested": True}})
    with pytest.raises(ValueError, match=r"1\.\.60 characters"):
        store.put((owner,), "k" * 61, {"content": "v"})
    with pytest.raises(Exception, match="polarity must be one of"):
        store.put((owner,), "k", {"content": "v", "polarity": "strong"})
    with pytest.raises(InvalidNamespaceError, match="list_namespaces needs prefix=\\(owner, …\\)"):
        store.list_namespaces()
    with pytest.raises(InvalidNamespaceError, match="search prefix is empty"):
        store.search((), query="x")
    assert transport.sent == []


def test_a_gate_rejection_fails_the_put_and_stores_nothing_of_the_batch(
    store: AtlasoStore, memory: Memory, owner: str
):
    from atlaso import DepositRejectedError

    with pytest.raises(
        DepositRejectedError, match="positive/broad claim requires evidence_grade>=replicated"
    ):
        store.batch([
            PutOp((owner,), "note", {"content": "a note"}),
            PutOp((owner,), "claim", {"content": "all uploads work", "polarity": "positive"}),
        ])  # fmt: skip
    assert memory.for_user(owner).list_recent().total == 0


def test_deposits_written_without_the_store_are_items_keyed_by_their_id(
    store: AtlasoStore, memory: Memory, owner: str
):
    written = memory.for_user(owner).add("Alice is vegan", scope={"note": "diet"})
    (item,) = store.search((owner, "diet"))
    assert (item.key, item.namespace) == (written.id, (owner, "diet"))
    store.put((owner, "diet"), written.id, {"content": "Alice is vegetarian now"})
    assert memory.for_user(owner).get(written.id).superseded_by
    assert store.get((owner, "diet"), written.id).value["content"] == "Alice is vegetarian now"


def test_a_batch_costs_one_read_of_the_owner_and_one_bulk_write(served: ServedAtlaso, owner: str):
    store, transport = counted(served)
    store.put((owner, "a"), "k0", {"content": "zero"})
    transport.sent.clear()
    results = store.batch([
        *(PutOp((owner, "a"), f"k{n}", {"content": f"value {n}"}) for n in range(5)),
        GetOp((owner, "a"), "k0"),
        SearchOp((owner,), query="value"),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", (owner,)),)),
    ])  # fmt: skip
    assert results[5].value["content"] == "zero"  # reads see the store before the batch's writes
    assert sorted(transport.sent) == sorted([
        f"GET /api/v1/users/{owner}/recall",
        f"GET /api/v1/users/{owner}/deposits",
        f"POST /api/v1/users/{owner}/deposits/bulk",
    ])  # fmt: skip
    assert store.get((owner, "a"), "k0").value["content"] == "value 0"


def test_the_async_store_does_the_same_with_each_steps_requests_at_once(served: ServedAtlaso, owner: str):
    transport = AsyncCounting()

    async def main() -> Any:
        memory = AsyncMemory(api_key=served.keys["client-rw"], base_url=served.url, transport=transport)
        async with memory:
            store = AsyncAtlasoStore(memory)
            await store.aput((owner, "mood"), "today", {"content": "Alice is tired"})
            await store.aput((owner, "mood"), "today", {"content": "Alice is rested"})
            await store.aput((owner, "plans"), "trip", {"content": "Alice plans a trip to Lyon"})
            transport.sent.clear()
            got, searched, listed = await store.abatch([
                GetOp((owner, "mood"), "today"),
                SearchOp((owner,), query="Alice rested"),
                ListNamespacesOp(match_conditions=(MatchCondition("prefix", (owner,)),)),
            ])  # fmt: skip
            sent = list(transport.sent)
            await store.adelete((owner, "plans"), "trip")
            return (
                got,
                searched,
                listed,
                sent,
                await store.asearch((owner,)),
                await store.aget((owner, "plans"), "trip"),
            )

    got, searched, listed, sent, after, trip = asyncio.run(main())
    assert got.value["content"] == "Alice is rested"
    assert searched[0].value["content"] == "Alice is rested"
    assert set(listed) == {(owner, "mood"), (owner, "plans")}
    assert len(sent) == 2  # the recall and the owner's one page, sent together
    assert [item.key for item in after] == ["today"] and trip is None


def test_the_async_store_refuses_its_blocking_methods_inside_a_running_loop(served: ServedAtlaso, owner: str):
    async def main() -> None:
        store = AsyncAtlasoStore(AsyncMemory(api_key=served.keys["client-rw"], base_url=served.url))
        with pytest.raises(RuntimeError, match="await its a-methods"):
            store.get((owner,), "k")

    asyncio.run(main())
    store = AsyncAtlasoStore(AsyncMemory(api_key=served.keys["client-rw"], base_url=served.url))
    store.put((owner,), "k", {"content": "from sync code"})
    assert store.get((owner,), "k").value["content"] == "from sync code"


# ---- A graph ----------------------------------------------------------------------------------


@dataclass
class Context:
    user_id: str


class State(TypedDict, total=False):
    said: str
    remembered: list[str]


def remember_and_recall(state: State, runtime: Runtime[Context]) -> State:
    """A node that writes what the user said to their memory, then reads everything it holds."""
    namespace = (runtime.context.user_id, "chat")
    count = len(runtime.store.search(namespace, limit=100))
    runtime.store.put(namespace, f"turn-{count}", {"content": state["said"]})
    return {
        "remembered": sorted(item.value["content"] for item in runtime.store.search(namespace, limit=100))
    }


def graph(store: Any) -> Any:
    builder = StateGraph(State, context_schema=Context)
    builder.add_node("remember_and_recall", remember_and_recall)
    builder.add_edge(START, "remember_and_recall")
    builder.add_edge("remember_and_recall", END)
    return builder.compile(store=store)


def test_a_compiled_graph_writes_and_reads_memory_across_runs(store: AtlasoStore, memory: Memory, owner: str):
    app = graph(store)
    app.invoke({"said": "I live in Lyon"}, context=Context(user_id=owner))
    answer = app.invoke({"said": "I work nights"}, context=Context(user_id=owner))
    assert answer["remembered"] == ["I live in Lyon", "I work nights"]
    # Memory any other agent reads: the deposits, in the graph's namespace.
    assert {hit.content for hit in memory.for_user(owner).recall("Lyon nights")} == {
        "I live in Lyon",
        "I work nights",
    }


def test_a_graph_run_asynchronously_uses_either_store(served: ServedAtlaso, owner: str):
    async def main() -> Any:
        sync_store = AtlasoStore(Memory(api_key=served.keys["client-rw"], base_url=served.url))
        first = await graph(sync_store).ainvoke({"said": "likes jazz"}, context=Context(user_id=owner))
        async_store = AsyncAtlasoStore(AsyncMemory(api_key=served.keys["client-rw"], base_url=served.url))
        second = await graph(async_store).ainvoke({"said": "likes opera"}, context=Context(user_id=owner))
        return first, second

    first, second = asyncio.run(main())
    assert first["remembered"] == ["likes jazz"]
    assert second["remembered"] == ["likes jazz", "likes opera"]
