"""An import's deposits with their key to their bag checked once per batch (PostgreSQL).

The same rows as the per-row check writes, a batch naming a bag that is not there refused, and the
per-row check whenever a trigger would not fire for the batch's COPY (deposits.sql.import_batch).
"""

from __future__ import annotations

import io
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from deposits.models import ConflictCopy, Deposit, EmbeddingPending, ScopeBag
from deposits.services import portability
from deposits.services.deposits import DEPOSIT_COLUMNS
from deposits.services.portability import owner_import
from deposits.sql import import_batch

pytestmark = [
    pytest.mark.django_db(transaction=False),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the set-wise check is PostgreSQL's"),
]

HEADER = {
    "kind": "atlaso_export",
    "version": 1,
    "user_id": "source",
    "exported_at": "2026-12-01T00:00:00+00:00",
}


def _body(count: int) -> bytes:
    """`count` claims over three bags, one of them in conflict (positive and negative claims)."""
    start = datetime(2026, 11, 1, tzinfo=UTC)
    lines = [HEADER]
    for n in range(count):
        bag = n % 3
        polarity = ("positive", "negative")[n % 2] if bag == 0 else "open"
        lines.append({
            "kind": "deposit", "id": str(uuid.uuid4()), "content": f"claim {n} about lighthouse lamps",
            "polarity": polarity, "evidence_grade": "observed", "scope": {"model": "m", "env": f"e{bag}"},
            "created_at": (start + timedelta(minutes=n)).isoformat(),
        })  # fmt: skip
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def _import(owner: str, body: bytes) -> None:
    result = owner_import(
        user_id=owner, read=io.BytesIO(body).read, channel="mover", tier="agent_own", ceiling=0.8
    )
    assert result.deposits.committed == body.count(b"\n") - 1, result


def _written(owner: str) -> dict[str, list[tuple[object, ...]]]:
    """What an import wrote for the owner, without the ids it chose (its bags' ids name it)."""
    deposits = Deposit.objects.filter(user_id=owner)
    copied = set(ConflictCopy.objects.filter(user_id=owner).values_list("id", flat=True))
    queued = set(EmbeddingPending.objects.filter(user_id=owner).values_list("deposit_id", flat=True))
    return {
        "deposits": sorted(
            (content, polarity, at, pk in copied, pk in queued)
            for pk, content, polarity, at in deposits.values_list("pk", "content", "polarity", "created_at")
        ),
        "bags": sorted(
            ScopeBag.objects.filter(user_id=owner).values_list(
                "env", "live_positive", "live_negative", "live_open", "directional_kinds"
            )
        ),
        "lexemes": _lexemes(owner),
        "strays": sorted((copied | queued) - set(deposits.values_list("pk", flat=True))),
    }


def _lexemes(owner: str) -> list[tuple[object, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT env, live_terms::text FROM deposits_scopebag WHERE user_id = %s ORDER BY env", [owner]
        )
        return cursor.fetchall()


def test_the_set_wise_check_writes_what_the_per_row_check_writes(monkeypatch):
    assert import_batch.bag_keys_setwise(), "the test database's role may set session_replication_role"
    body = _body(30)
    _import("setwise", body)
    # The same file into another owner with the per-row check (each id is held now: new ones).
    monkeypatch.setattr(import_batch, "bag_keys_setwise", lambda: False)
    _import("per-row", body)
    setwise, per_row = _written("setwise"), _written("per-row")
    assert setwise == per_row
    # Every deposit waits for its vector; the bag in conflict's ten are copied.
    assert [d[3:] for d in setwise["deposits"]].count((True, True)) == 10
    assert all(queued for *_, queued in setwise["deposits"]) and not setwise["strays"]


def test_a_batch_naming_a_bag_that_is_not_there_is_refused():
    row = (
        uuid.uuid4(), "nobody", "no-such-bag", "a claim", "open", "observed", None, None, None, None, None,
        None, None, [], [], None, None, None, "mover", "unreplicated", None, None, timezone.now(),
    )  # fmt: skip
    with pytest.raises(IntegrityError, match="no-such-bag"), transaction.atomic():
        import_batch.copy_deposits(DEPOSIT_COLUMNS, [row], ["no-such-bag"])
    assert not Deposit.objects.filter(user_id="nobody").exists()


def test_a_trigger_that_would_not_fire_in_the_copy_turns_the_set_wise_check_off(monkeypatch):
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION pg_temp.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$"
        )
        cursor.execute(
            "CREATE TRIGGER import_test_noop AFTER INSERT ON deposits_embeddingpending "
            "FOR EACH STATEMENT EXECUTE FUNCTION pg_temp.noop()"
        )
    assert not import_batch.bag_keys_setwise()
    copied = []
    monkeypatch.setattr(portability.import_batch, "copy_deposits", lambda *a: copied.append(a))
    _import("per-row", _body(6))
    assert not copied
    assert all(queued for *_, queued in _written("per-row")["deposits"])
