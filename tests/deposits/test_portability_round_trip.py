"""An owner's memory exported and imported again is the same memory (portability.md).

Random stores (adds, bulk writes, corrections, retractions of claims and of corrections, erasures,
observations on channels of two tiers, some claimed out of order, confirmed values with their
outcomes, resolutions and undone resolutions) are exported, then imported into a fresh owner of
the same database (every id taken: each deposit gets a new one) and, after the owner is
forgotten, into the same owner as into a fresh database (every id free: each kept). Each time
every deposit, edge and retraction, every bag's counts and flags, every recall's ids and flags,
every belief's verdict and the owner's tally equal the original's; a second import changes
nothing; every derived structure equals a recount.
"""

from __future__ import annotations

import io
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from atlaso_site.access.models import Channel
from beliefs.models import Belief
from beliefs.selectors import belief_verdict
from beliefs.services import belief_confirm, channel_get_or_create, observation_record
from deposits.domain.types import POLARITIES
from deposits.domain.validation import validate_bulk, validate_correction, validate_deposit
from deposits.models import (
    ConflictEpisode,
    Contradiction,
    Deposit,
    ImportedRow,
    OwnerTally,
    Resolution,
    ScopeBag,
)
from deposits.selectors.export import export_bytes
from deposits.selectors.recall import recall
from deposits.services.deposits import deposit_add, deposit_add_many, deposit_contradict, deposit_retract
from deposits.services.portability import ImportResult, owner_import
from deposits.services.review import bag_resolve, resolution_undo
from diagnostics.forget import owner_forget
from tests.deposits.recount import assert_bags_match_a_recount

pytestmark = pytest.mark.django_db(transaction=False)

SCOPES = [{"model": "gpt-5", "dataset": "evals", "env": env} for env in ("a", "b", "c")]
KEYS = ["coffee_ratio", "home_city"]
VALUES = ["five", "six", "seven"]
CHANNELS = {"agent-rt": "agent_own", "web-rt": "web_fetch"}
QUERIES = ["marker", "claim", "correction", "resolved marker"]

operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"), st.sampled_from(POLARITIES), st.integers(0, len(SCOPES) - 1), st.booleans()
        ),
        st.tuples(
            st.just("bulk"), st.sampled_from(POLARITIES), st.integers(0, len(SCOPES) - 1), st.integers(1, 4)
        ),
        st.tuples(st.just("correct"), st.sampled_from(POLARITIES), st.integers(0, 50), st.booleans()),
        st.tuples(st.just("retract"), st.just(""), st.integers(0, 50), st.booleans()),
        st.tuples(st.just("erase"), st.just(""), st.integers(0, 50), st.booleans()),
        st.tuples(st.just("observe"), st.sampled_from(VALUES), st.integers(0, 3), st.booleans()),
        st.tuples(st.just("confirm"), st.sampled_from(VALUES), st.integers(0, 1), st.booleans()),
        st.tuples(st.just("resolve"), st.just(""), st.integers(0, len(SCOPES) - 1), st.booleans()),
        st.tuples(st.just("undo"), st.just(""), st.integers(0, 50), st.booleans()),
    ),
    min_size=1,
    max_size=18,
)


def _body(polarity: str, content: str, scope: dict[str, Any], belief: dict[str, str] | None = None) -> dict:
    body = {
        "content": content, "polarity": polarity, "evidence_grade": "verified",
        "artifact_refs": ["s3://runs/1"], "scope": scope, "tags": ["t1"],
    }  # fmt: skip
    if belief:
        body["belief"] = belief
    return body


def _write(user: str, ops: list[tuple[str, str, int, bool]]) -> None:
    written: list[str] = []
    now = timezone.now()
    for n, (kind, word, pick, flag) in enumerate(ops):
        if kind == "add":
            belief = {"key": KEYS[pick % 2], "value": VALUES[pick % 3]} if flag else None
            draft = validate_deposit(user, _body(word, f"marker claim {n}", SCOPES[pick], belief))
            written.append(deposit_add(draft=draft, channel="agent-rt", idempotency_key=f"k{n}").id)
        elif kind == "bulk":
            items = [
                {**_body(word, f"marker claim {n}.{i}", SCOPES[pick]), "idempotency_key": f"b{n}.{i}"}
                for i in range(flag)
            ]
            result = deposit_add_many(bulk=validate_bulk(user, items), channel="agent-rt")
            written += [record.id for record in result.committed]
        elif kind == "correct" and written:
            target = written[pick % len(written)]
            if not Deposit.objects.filter(pk=target, retracted_at__isnull=True).exists():
                continue
            data = {
                **_body(word, f"marker correction {n}", SCOPES[0]),
                "contradicts": [target],
                "reason": "re-measured",
            }
            if flag:
                data.pop("scope")
            correction = validate_correction(user, data)
            written.append(deposit_contradict(correction=correction, channel="agent-rt").id)
        elif kind in ("retract", "erase") and written:
            target = written[pick % len(written)]
            deposit_retract(user_id=user, deposit_id=target, mode="soft" if kind == "retract" else "hard")
            if kind == "erase":
                written.remove(target)
        elif kind == "observe":
            channel = Channel.objects.select_related("tier").get(name="web-rt" if flag else "agent-rt")
            # Some claims arrive after later ones: the log replays in claim-time order.
            observation_record(
                user_id=user, key=KEYS[pick % 2], value=word, channel=channel,
                observed_at=now - timedelta(minutes=pick), content_confidence=0.9,
            )  # fmt: skip
        elif kind == "confirm":
            belief_confirm(user_id=user, key=KEYS[pick], value=word, reviewer="rita")
        elif kind == "resolve":
            _resolve(user, SCOPES[pick])
        elif kind == "undo":
            undoable = list(
                Resolution.objects.filter(user_id=user, undone_at__isnull=True).values_list(
                    "deposit_id", flat=True
                )
            )
            if undoable:
                resolution_undo(user_id=user, deposit_id=str(undoable[pick % len(undoable)]), reviewer="rita")


def _resolve(user: str, scope: dict[str, Any]) -> None:
    bag = ScopeBag.objects.filter(user_id=user, env=scope["env"]).in_conflict().first()
    if bag is None:
        return
    live = Deposit.objects.filter(user_id=user, bag=bag).live().directional()
    first = live.order_by("created_at").first()
    assert first is not None
    keep = [str(d.pk) for d in live if d.polarity == first.polarity]
    bag_resolve(user_id=user, bag_id=bag.pk, keep=keep, reason="resolved marker", reviewer="rita")


def _import(user: str, body: bytes) -> ImportResult:
    return owner_import(user_id=user, read=io.BytesIO(body).read, keep_provenance=True)


def _ids(user: str) -> dict[str, str]:
    """The owner's deposit for each source id: filed under another id, else its own."""
    moved = dict(
        ImportedRow.objects.filter(user_id=user, kind=ImportedRow.DEPOSIT).values_list("source", "target")
    )
    return moved


def _view(user: str, now: datetime, ids: dict[str, str] | None = None) -> dict[str, Any]:
    """Everything the round trip keeps, with the original's ids mapped to the imported owner's."""

    def name(deposit_id: object) -> str:
        text = str(deposit_id)
        return (ids or {}).get(text, text)

    deposits = {
        name(row["id"]): {k: v for k, v in row.items() if k not in ("id", "user_id", "bag_id")}
        for row in Deposit.objects.filter(user_id=user).values()
    }
    edges = {
        (name(new), name(old)): (reason, created_at, superseding)
        for new, old, reason, created_at, superseding in Contradiction.objects.filter(
            user_id=user
        ).values_list("new_deposit_id", "old_deposit_id", "reason", "created_at", "superseding")
    }
    facets = ("model", "dataset", "env", "version", "n", "seed")
    counted = (
        "live_positive", "live_negative", "live_cautionary", "live_open", "newest_positive_at",
        "newest_negative_at", "newest_cautionary_at", "kept_positive", "kept_negative", "kept_cautionary",
        "kept_superseded", "directional", "directional_kinds", "kept_kinds", "agreement",
    )  # fmt: skip
    # The bags that hold a deposit: one whose every deposit was erased stays empty where it was,
    # and is never made where the memory arrives.
    holding = ScopeBag.objects.filter(
        user_id=user, id__in=Deposit.objects.filter(user_id=user).values("bag_id")
    )
    resolved = set(holding.resolved().values_list("env", flat=True))
    bags = {
        tuple(row[f] for f in facets): (tuple(row[c] for c in counted), row["env"] in resolved)
        for row in holding.values()
    }
    episodes = sorted(
        ConflictEpisode.objects.filter(user_id=user, ended_at__isnull=True).values_list("bag__env", flat=True)
    )
    recalls = {}
    for query in QUERIES:
        results = recall(user_id=user, query=query, limit=50, now=now)
        # Equal scores (a bulk's claims of one polarity, stamped alike) are ordered by id.
        recalls[query] = (
            sorted(
                (name(hit.id), hit.is_confident, hit.has_disagreement, hit.is_thin_evidence,
                 tuple(sorted(name(p) for p in hit.conflict_peers)), (hit.belief.fact, hit.belief.value_probability) if hit.belief else None)
                for hit in results
            ),
            results.has_disagreement, results.is_confident, results.bag_count, results.conflict_bag_count,
        )  # fmt: skip
    verdicts = {}
    for key in Belief.objects.filter(user_id=user).values_list("key", flat=True):
        verdict = belief_verdict(user_id=user, key=key, now=now).to_json()
        verdict.pop("updated_at")
        verdicts[key] = verdict
    # An owner whose every deposit was erased keeps a tally of nothing; one never written has none.
    tally = OwnerTally.objects.filter(user_id=user).values_list(
        "live_deposits", "open_conflicts"
    ).first() or (0, 0)
    return {
        "deposits": deposits, "edges": edges, "bags": bags, "episodes": episodes, "recalls": recalls,
        "verdicts": verdicts, "tally": tally,
    }  # fmt: skip


@pytest.fixture
def channels(db: None) -> None:
    for name, tier in CHANNELS.items():
        channel_get_or_create(name=name, tier_name=tier)


def _assert_nothing_new(result: ImportResult) -> None:
    for kind, counts in result.kinds().items():
        assert (counts.committed, counts.failed) == (0, 0), (kind, counts)
    assert not result.failed_lines


@settings(
    max_examples=30 if connection.vendor == "postgresql" else 40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=operations)
# A retracted correction (what it corrected is live again), and a resolution undone after an
# observation, a confirmed value and an erasure: each is tried whatever the draw.
@example(
    ops=[
        ("add", "positive", 0, False),
        ("add", "negative", 0, False),
        ("correct", "positive", 1, False),
        ("retract", "", 2, False),
    ]
)
@example(
    ops=[("add", "positive", 0, True), ("add", "negative", 0, False), ("resolve", "", 0, False), ("undo", "", 0, False),
         ("observe", "six", 1, False), ("confirm", "five", 0, False), ("erase", "", 0, False)]
)  # fmt: skip
def test_an_export_imported_anywhere_is_the_same_memory_and_a_second_import_changes_nothing(
    channels: None, ops: list[tuple[str, str, int, bool]]
) -> None:
    user = f"rt-{uuid.uuid4().hex[:10]}"
    _write(user, ops)
    now = timezone.now()
    original = _view(user, now)
    body = b"".join(export_bytes(user, gzip=True))

    # Into a fresh owner of this database: every id is taken, so every deposit gets a new one.
    copy = f"{user}-copy"
    first = _import(copy, body)
    assert not first.failed_lines, first.failed_lines
    assert first.deposits.committed == len(original["deposits"])
    moved = _ids(copy)
    assert len(moved) == len(original["deposits"])
    assert _view(copy, now) == _view(user, now, moved)
    _assert_nothing_new(_import(copy, body))
    assert _view(copy, now) == _view(user, now, moved)

    # Into the same owner after it was forgotten, as into a fresh database: every id is kept.
    owner_forget(user_id=user)
    assert not Deposit.objects.filter(user_id=user).exists()
    again = _import(user, body)
    assert not again.failed_lines, again.failed_lines
    assert not _ids(user)
    assert _view(user, now) == original
    _assert_nothing_new(_import(user, body))
    assert _view(user, now) == original
    assert_bags_match_a_recount()
