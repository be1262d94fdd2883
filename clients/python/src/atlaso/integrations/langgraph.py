"""LangGraph's long-term memory store (`BaseStore`) over Atlaso: `AtlasoStore`, `AsyncAtlasoStore`.

The mapping, fixed so that code written against it keeps working:

- a namespace `(owner, *rest)` is the memory owner (`user_id`) and, joined with `/`, the scope
  `note` of its deposits (`("alice", "preferences")` is owner `alice`, note `preferences`); a
  namespace that cannot map (empty, an owner that is not an owner's name, a label holding `/`,
  a note past 2,000 characters) is refused with LangGraph's `InvalidNamespaceError`;
- a key is carried as the tag `key:<key>` (keys of at most 60 characters); a deposit written
  without one (by another agent, the CLI, MCP) is an item whose key is its deposit id;
- `put` writes a deposit; on a key that holds a live item it contradicts it, so the old value
  stays readable as history, superseded; `get` answers the live one, its value
  `{"content": …, "polarity": …, "evidence_grade": …}` and whichever of `scope` (facets),
  `tags`, `artifact_refs`, `author`, `author_role`, `task_id`, `belief` it has; a value with
  another field, or without text `content`, is refused;
- `delete` soft-retracts every deposit of that key in the namespace (retracting only the live
  one would revive the value it superseded);
- `search(prefix, query=…)` is recall within the prefix, each `SearchItem.value` carrying
  `atlaso: {is_confident, has_disagreement, bag_id, id}`; without a query it lists the live
  items under the prefix, newest first; `filter` compares the values as LangGraph's stores do;
- `list_namespaces` lists the namespaces of one owner's deposits' notes (its `prefix` names
  the owner).

A batch reads first and writes after (as LangGraph's own stores do): one pass over each owner's
deposits (a request per 200, the first alone and the rest at once) and one recall per search,
then one bulk request per owner for its puts (all or nothing up to 1,000) and a retraction per
deleted deposit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from atlaso import _operations as ops
from atlaso._async_client import AsyncMemory
from atlaso._client import Memory
from atlaso._errors import AtlasoError, InputValidationError
from atlaso._plan import Plan, adrive, drive
from atlaso._types import AddItem, AddManyResult, Deposit, DepositPage, Scope, SearchResults
from atlaso._validation import check_user_id

KEY_TAG = "key:"
MAX_TAG = 64
MAX_KEY = MAX_TAG - len(KEY_TAG)
MAX_NOTE = 2000
PAGE = 200  # deposits a page, the API's most
# The fields of a value, each the deposit's field of that name; `atlaso` (search's flags) is
# read-only: a value read back and put again carries it, and it is left out.
VALUE_FIELDS = (
    "content",
    "polarity",
    "evidence_grade",
    "scope",
    "tags",
    "artifact_refs",
    "author",
    "author_role",
    "task_id",
    "belief",
)
FLAGS = "atlaso"
# A search within a namespace below the owner asks recall for this many times the hits it keeps,
# since recall ranks the owner's whole memory and the namespace is chosen afterwards.
NARROWING = 10
MAX_RECALL = 1000  # hits one recall answers at most
RETRACT_REASON = "deleted through the LangGraph store (key {key!r})"


@dataclass(frozen=True, slots=True)
class _Place:
    """Where a namespace lives in Atlaso: the owner and the scope note (None: no note)."""

    owner: str
    note: str | None


def _labels(namespace: Sequence[Any], what: str) -> list[str]:
    for label in namespace[1:]:
        if not isinstance(label, str) or not label:
            raise InvalidNamespaceError(f"{what} {tuple(namespace)!r}: each label must be non-empty text")
        if "/" in label:
            raise InvalidNamespaceError(
                f"{what} {tuple(namespace)!r}: the labels after the owner are joined with '/' into the "
                f"deposits' scope note, so a label cannot hold '/' ({label!r})"
            )
    return list(namespace[1:])


def _owner(namespace: Sequence[Any], what: str) -> str:
    if not namespace:
        raise InvalidNamespaceError(
            f"{what} is empty: its first element is the memory owner (user_id), e.g. ('alice', 'preferences')"
        )
    owner = namespace[0]
    try:
        if not isinstance(owner, str):
            raise InputValidationError(f"the owner must be text, not {type(owner).__name__}")
        check_user_id(owner)
    except InputValidationError as error:
        raise InvalidNamespaceError(
            f"{what} {tuple(namespace)!r} cannot map: its first element is the memory owner, and {error}"
        ) from error
    return owner


def place(namespace: Sequence[Any]) -> _Place:
    """The owner and note a namespace maps to, or InvalidNamespaceError saying why it cannot."""
    owner = _owner(namespace, "namespace")
    note = "/".join(_labels(namespace, "namespace")) or None
    if note is not None and len(note) > MAX_NOTE:
        raise InvalidNamespaceError(
            f"namespace {tuple(namespace)!r}: its labels after the owner, joined with '/', are the "
            f"scope note, at most {MAX_NOTE} characters; these come to {len(note)}"
        )
    return _Place(owner, note)


def namespace_of(deposit: Deposit) -> tuple[str, ...]:
    """The namespace a deposit is in: its owner, then its note's labels."""
    note = deposit.scope.note
    return (deposit.user_id, *note.split("/")) if note else (deposit.user_id,)


def key_of(deposit: Deposit) -> str:
    """The key a deposit is stored under: its `key:` tag, or its id when it has none."""
    return next((tag[len(KEY_TAG) :] for tag in deposit.tags if tag.startswith(KEY_TAG)), deposit.id)


def _checked(op: PutOp) -> None:
    """Refuse, before any request, a put whose key, value or TTL cannot map."""
    if not isinstance(op.key, str) or not op.key or len(op.key) > MAX_KEY:
        raise ValueError(
            f"key {op.key!r} cannot map: a key is carried as the tag 'key:<key>', so it must be text of "
            f"1..{MAX_KEY} characters"
        )
    if op.ttl is not None:
        raise NotImplementedError("Atlaso keeps a memory until it is retracted: it has no TTL")
    where = place(op.namespace)
    if op.value is not None:
        ops.bulk_items([deposit_item(where, op.key, op.value, ())])


def value_of(deposit: Deposit) -> dict[str, Any]:
    """An item's value: the deposit's content and typed fields (its key tag and note left out)."""
    value: dict[str, Any] = {
        "content": deposit.content,
        "polarity": deposit.polarity,
        "evidence_grade": deposit.evidence_grade,
    }
    facets = {k: v for k, v in deposit.scope.to_dict().items() if k != "note" and v is not None}
    tags = [tag for tag in deposit.tags if not tag.startswith(KEY_TAG)]
    optional: dict[str, Any] = {
        "scope": facets or None,
        "tags": tags or None,
        "artifact_refs": list(deposit.artifact_refs) or None,
        "author": deposit.author,
        "author_role": deposit.author_role,
        "task_id": deposit.task_id,
        "belief": deposit.belief.to_dict() if deposit.belief else None,
    }
    value.update({name: v for name, v in optional.items() if v is not None})
    return value


def _texts(value: Mapping[str, Any], name: str) -> tuple[str, ...]:
    found = value.get(name) or ()
    if isinstance(found, str) or not all(isinstance(text, str) for text in found):
        raise ValueError(f"value[{name!r}] must be a list of texts")
    return tuple(found)


def deposit_item(where: _Place, key: str, value: Mapping[str, Any], supersedes: Sequence[str]) -> AddItem:
    """The bulk item a put writes: the value's fields, the namespace's note and the key's tag."""
    if not isinstance(value, Mapping):
        raise ValueError(f"a value is a dict with 'content', not {type(value).__name__}")
    unknown = sorted(set(value) - {*VALUE_FIELDS, FLAGS})
    if unknown:
        raise ValueError(
            f"value has field{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} that a "
            f"deposit does not: a value takes {', '.join(VALUE_FIELDS)} (content required)"
        )
    content = value.get("content")
    if not isinstance(content, str):
        raise ValueError(
            "value['content'] must be the memory's text (a claim in plain words), "
            f"not {type(content).__name__}"
        )
    scope = value.get("scope") or {}
    if not isinstance(scope, Mapping) or "note" in scope:
        raise ValueError("value['scope'] holds the six facets only: the namespace is the note")
    tags = _texts(value, "tags")
    if any(tag.startswith(KEY_TAG) for tag in tags):
        raise ValueError(f"value['tags'] cannot hold a {KEY_TAG!r} tag: the store writes the key's own")
    return AddItem(
        content=content,
        idempotency_key=ops.new_idempotency_key(),
        polarity=value.get("polarity", "open"),
        evidence_grade=value.get("evidence_grade", "anecdotal"),
        scope=Scope.from_wire({**ops.scope_wire(scope, facets_only=True), "note": where.note}),
        tags=(KEY_TAG + key, *tags),
        contradicts=tuple(supersedes),
        artifact_refs=_texts(value, "artifact_refs"),
        author=value.get("author"),
        author_role=value.get("author_role"),
        task_id=value.get("task_id"),
        belief=value.get("belief"),
    )


# ---- Filters, as LangGraph's in-memory store compares them (a JSONB-like containment) --------


def _operator(value: Any, operator: str, wanted: Any) -> bool:
    if operator == "$eq":
        return bool(value == wanted)
    if operator == "$ne":
        return bool(value != wanted)
    if operator in ("$gt", "$gte", "$lt", "$lte"):
        try:
            left, right = float(value), float(wanted)
        except (TypeError, ValueError):
            return False
        return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[
            operator
        ]
    raise ValueError(f"unsupported filter operator {operator!r}: $eq, $ne, $gt, $gte, $lt, $lte")


def matches(value: Any, wanted: Any) -> bool:
    """Whether `value` holds what the filter `wanted` asks (nested dicts, lists, $ operators)."""
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(value, op, v) for op, v in wanted.items())
        return isinstance(value, Mapping) and all(matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(wanted)
            and all(matches(v, w) for v, w in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _under(namespace: tuple[str, ...], prefix: Sequence[str]) -> bool:
    return namespace[: len(prefix)] == tuple(prefix)


def _fits(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = (
        namespace[: len(path)]
        if condition.match_type == "prefix"
        else namespace[len(namespace) - len(path) :]
    )
    return all(p == "*" or p == n for n, p in zip(part, path, strict=True))


# ---- One batch ----------------------------------------------------------------------------


@dataclass
class _Owner:
    """What a batch reads of one owner: its non-retracted deposits, newest first."""

    deposits: list[Deposit] = field(default_factory=list)

    def of_key(self, where: _Place, key: str) -> list[Deposit]:
        return [d for d in self.deposits if d.scope.note == where.note and key_of(d) == key]

    def live(self) -> list[Deposit]:
        return [d for d in self.deposits if d.is_live]


def _owner_of(op: Op) -> str | None:
    """The owner whose deposits an op must read (None: it reads none, e.g. a search by recall)."""
    if isinstance(op, (GetOp, PutOp)):
        return place(op.namespace).owner
    if isinstance(op, SearchOp):
        owner = _owner(op.namespace_prefix, "search prefix")
        _labels(op.namespace_prefix, "search prefix")
        return None if op.query else owner
    return _listing_owner(op)


def _listing_owner(op: ListNamespacesOp) -> str:
    for condition in op.match_conditions or ():
        if condition.match_type == "prefix" and condition.path and condition.path[0] != "*":
            return _owner(condition.path, "list_namespaces prefix")
    raise InvalidNamespaceError(
        "list_namespaces needs prefix=(owner, …): Atlaso lists the namespaces of one memory owner at a time"
    )


def _read(
    owners: Sequence[str], recalls: Sequence[ops.Operation[SearchResults]]
) -> Plan[tuple[list[SearchResults], dict[str, _Owner]]]:
    """The recalls' answers, and every non-retracted deposit of each owner.

    The recalls and each owner's first page are asked together, then every further page together.
    """
    answers = yield [*recalls, *(ops.list_recent(owner, limit=PAGE) for owner in owners)]
    found: list[SearchResults] = answers[: len(recalls)]
    firsts: list[DepositPage] = answers[len(recalls) :]
    rest = [
        (owner, start)
        for owner, page in zip(owners, firsts, strict=True)
        for start in range(PAGE, page.total, PAGE)
    ]
    pages: list[DepositPage] = (
        (yield [ops.list_recent(o, limit=PAGE, offset=s) for o, s in rest]) if rest else []
    )
    read = {owner: _Owner() for owner in owners}
    seen: set[str] = set()
    for owner, page in [
        *zip(owners, firsts, strict=True),
        *((o, p) for (o, _), p in zip(rest, pages, strict=True)),
    ]:
        for deposit in page.items:
            if deposit.id not in seen:  # a write between pages shifts them
                seen.add(deposit.id)
                read[owner].deposits.append(deposit)
    return found, read


def _item(deposit: Deposit) -> Item:
    return Item(
        value=value_of(deposit),
        key=key_of(deposit),
        namespace=namespace_of(deposit),
        created_at=deposit.created_at,
        updated_at=deposit.created_at,
    )


def _recall_limit(op: SearchOp) -> int:
    wanted = op.offset + op.limit
    narrowing = len(op.namespace_prefix) > 1 or bool(op.filter)
    return max(1, min(MAX_RECALL, wanted * (NARROWING if narrowing else 1)))


def _found(op: SearchOp, results: SearchResults) -> list[SearchItem]:
    found = []
    for hit in results:
        namespace = namespace_of(hit.deposit)
        value = value_of(hit.deposit)
        if not _under(namespace, op.namespace_prefix) or not matches(value, op.filter or {}):
            continue
        value[FLAGS] = {
            "is_confident": hit.is_confident,
            "has_disagreement": hit.has_disagreement,
            "bag_id": hit.bag_id,
            "id": hit.id,
        }
        found.append(SearchItem(namespace, key_of(hit.deposit), value, hit.deposit.created_at,
                                hit.deposit.created_at, score=hit.score))  # fmt: skip
    return found[op.offset : op.offset + op.limit]


def _listed(op: SearchOp, read: _Owner) -> list[SearchItem]:
    found = [
        SearchItem(namespace_of(d), key_of(d), value_of(d), d.created_at, d.created_at)
        for d in read.live()
        if _under(namespace_of(d), op.namespace_prefix) and matches(value_of(d), op.filter or {})
    ]
    return found[op.offset : op.offset + op.limit]


def _namespaces(op: ListNamespacesOp, read: _Owner) -> list[tuple[str, ...]]:
    found = {namespace_of(d) for d in read.deposits}
    found = {ns for ns in found if all(_fits(c, ns) for c in op.match_conditions or ())}
    if op.max_depth is not None:
        found = {ns[: op.max_depth] for ns in found}
    return sorted(found)[op.offset : op.offset + op.limit]


def _get(op: GetOp, read: _Owner) -> Item | None:
    where = place(op.namespace)
    live = [d for d in read.of_key(where, str(op.key)) if d.is_live]
    return _item(live[0]) if live else None


@dataclass
class _Writes:
    """One owner's writes of a batch: the bulk of its puts, and the deposits its deletes retract."""

    items: list[AddItem] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    superseded: list[tuple[str, str]] = field(default_factory=list)  # (deposit id, key)
    live: list[tuple[str, str]] = field(default_factory=list)


def _writes(
    puts: Mapping[tuple[str, tuple[str, ...], str], PutOp], read: Mapping[str, _Owner]
) -> dict[str, _Writes]:
    writes: dict[str, _Writes] = {}
    for (owner, _, key), op in puts.items():
        where = place(op.namespace)
        mine = writes.setdefault(owner, _Writes())
        of_key = read[owner].of_key(where, key)
        if op.value is None:
            # The superseded ones first: retracting the live one first would revive them.
            mine.superseded += [(d.id, key) for d in of_key if not d.is_live]
            mine.live += [(d.id, key) for d in of_key if d.is_live]
        else:
            mine.items.append(deposit_item(where, key, op.value, [d.id for d in of_key if d.is_live]))
            mine.keys.append(key)
    return writes


def _refused(owner: str, writes: _Writes, results: Sequence[dict[str, Any]]) -> None:
    outcome: AddManyResult = ops.add_many_result(writes.items, results)
    if outcome.failed:
        first = outcome.failed[0]
        error = first.error
        raise (error if isinstance(error, AtlasoError) else AtlasoError(str(error))) from ValueError(
            f"put of key {writes.keys[first.index]!r} for owner {owner!r} was refused"
            + ("; nothing of this batch's puts was stored" if len(writes.items) <= ops.MAX_BULK else "")
        )


def batch_plan(batch: Iterable[Op]) -> Plan[list[Result]]:
    """The plan of one batch: reads (scans, recalls) together, then writes, LangGraph's order."""
    ops_list = list(batch)
    for op in ops_list:
        if isinstance(op, PutOp):
            _checked(op)
    owners = list(dict.fromkeys(o for o in map(_owner_of, ops_list) if o is not None))
    recalls = [
        ops.recall(_owner(op.namespace_prefix, "search prefix"), str(op.query), limit=_recall_limit(op))
        for op in ops_list
        if isinstance(op, SearchOp) and op.query
    ]
    found, read = yield from _read(owners, recalls)
    answers: list[Result] = []
    recalled = iter(found)
    puts: dict[tuple[str, tuple[str, ...], str], PutOp] = {}
    for op in ops_list:
        if isinstance(op, GetOp):
            answers.append(_get(op, read[place(op.namespace).owner]))
        elif isinstance(op, SearchOp):
            answers.append(
                _found(op, next(recalled)) if op.query else _listed(op, read[op.namespace_prefix[0]])
            )
        elif isinstance(op, ListNamespacesOp):
            answers.append(_namespaces(op, read[_listing_owner(op)]))
        else:
            puts[(place(op.namespace).owner, tuple(op.namespace), op.key)] = op  # the last put of a key wins
            answers.append(None)
    yield from _write(_writes(puts, read))
    return answers


def _write(writes: Mapping[str, _Writes]) -> Plan[None]:
    calls: list[ops.Operation[Any]] = []
    bulks: list[tuple[str, _Writes, int]] = []
    for owner, mine in writes.items():
        if mine.items:
            on_reject = "abort" if len(mine.items) <= ops.MAX_BULK else "skip"
            batches = ops.add_many_batches(owner, ops.bulk_items(mine.items), on_gate_reject=on_reject)
            bulks.append((owner, mine, len(batches)))
            calls += batches
        calls += [
            ops.retract(owner, deposit, reason=RETRACT_REASON.format(key=key))
            for deposit, key in mine.superseded
        ]
    if calls:
        results = yield calls
        at = 0
        for owner, mine, count in bulks:
            _refused(owner, mine, results[at : at + count])
            at += count + len(mine.superseded)
    last = [
        ops.retract(o, d, reason=RETRACT_REASON.format(key=k)) for o, w in writes.items() for d, k in w.live
    ]
    if last:
        yield last
    return None


class AtlasoStore(BaseStore):
    """LangGraph's `BaseStore` over Atlaso, synchronous: `AtlasoStore(Memory())`.

    With no memory given, a `Memory()` from the environment (ATLASO_BASE_URL, ATLASO_API_KEY).
    The module's docstring says how namespaces, keys and values map to deposits.
    """

    def __init__(self, memory: Memory | None = None) -> None:
        super().__init__()
        self.memory = memory if memory is not None else Memory()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in as few requests as the API allows; results in their order."""
        return drive(self.memory, batch_plan(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` in a worker thread, so an event loop is not blocked by its requests."""
        return await asyncio.to_thread(self.batch, list(ops))


class AsyncAtlasoStore(BaseStore):
    """LangGraph's `BaseStore` over Atlaso, asynchronous: `AsyncAtlasoStore(AsyncMemory())`.

    Each step's requests go out together. `batch` (a sync graph's calls) runs the same plan on
    a loop of its own; from inside a running event loop use the `a` methods.
    """

    def __init__(self, memory: AsyncMemory | None = None) -> None:
        super().__init__()
        self.memory = memory if memory is not None else AsyncMemory()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in as few requests as the API allows, each step's at once."""
        return await adrive(self.memory, batch_plan(ops))

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """`abatch` on a loop of its own; refused inside a running loop, which it would block."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.abatch(list(ops)))
        raise RuntimeError(
            "AsyncAtlasoStore's synchronous methods would block this running event loop: await its "
            "a-methods (aget, aput, asearch, …), or use AtlasoStore in synchronous code"
        )


__all__ = ["AsyncAtlasoStore", "AtlasoStore"]
