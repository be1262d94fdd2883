"""Each wire shape has one owner, and every other spelling of it is pinned to that owner here.

The owners are the plain records the rules work with (the domain's dataclasses, the snapshot
model's point fields, the deposit model's columns); the ninja schemas that put them on the wire
and the column lists that write them in bulk must name the same fields in the same order, so a
field added to one and forgotten in another fails here rather than in a client.
"""

from __future__ import annotations

from dataclasses import fields

from atlaso_site.wire import BagScopeOut, DepositDetailOut, DepositOut, ScopeOut, VerdictOut
from beliefs.domain.rule import Verdict
from deposits.domain.types import FACETS, Deposit, Scope
from deposits.models import Deposit as DepositRow
from deposits.services.deposits import DEPOSIT_COLUMNS
from diagnostics.models import WIRE_POINT_FIELDS
from diagnostics.schemas import DeploymentSnapshotOut, SnapshotOut
from diagnostics.selectors import POINT_FIELDS

# What the domain's deposit carries for the pages and the audit, and the wire says otherwise.
AUDIT = ("superseded_by", "retracted_at", "retracted_reason")


def names(schema: type) -> list[str]:
    return list(schema.model_fields)


def test_the_verdict_on_the_wire_is_the_domain_verdict_with_its_kind():
    assert names(VerdictOut) == ["kind", *(f.name for f in fields(Verdict))]


def test_a_stored_verdict_has_the_wire_verdicts_keys_in_order():
    verdict = Verdict(
        belief_key="milk",
        fact="oat",
        probability=0.9,
        distribution=(("oat", 0.9),),
        unknown_mass=0.1,
        superseded=(),
        contested=(),
        inert=("soy",),
        entropy_bits=0.4,
        is_uncertain=False,
        observation_count=2,
        effective_count=1,
        updated_at=None,
    )
    stored = verdict.to_json()
    assert list(stored) == names(VerdictOut)
    assert stored["distribution"] == {"oat": 0.9} and stored["inert"] == ["soy"]


def test_scopes_on_the_wire_are_the_domain_scope_and_the_bag_facets():
    assert names(ScopeOut) == [f.name for f in fields(Scope)]
    assert names(BagScopeOut) == list(FACETS)


def test_a_deposit_on_the_wire_is_the_domain_deposit_without_its_audit_state():
    domain = [f.name for f in fields(Deposit) if f.name not in AUDIT]
    assert sorted(names(DepositOut)) == sorted(["kind", *domain])
    assert names(DepositDetailOut)[len(names(DepositOut)) :] == [
        "superseded_by",
        "retracted",
        "retracted_reason",
    ]


def test_a_snapshot_point_is_named_once_by_the_models_wire_fields():
    assert names(SnapshotOut) == ["taken_at", *WIRE_POINT_FIELDS]
    assert names(DeploymentSnapshotOut) == ["taken_at", *WIRE_POINT_FIELDS, "owner_count"]
    assert list(POINT_FIELDS) == ["taken_at", *WIRE_POINT_FIELDS, "owner_count"]


def test_the_bulk_insert_writes_every_column_of_the_deposit_table():
    model = {field.column for field in DepositRow._meta.concrete_fields}
    written = [name for name, _type in DEPOSIT_COLUMNS]
    assert len(written) == len(set(written))
    # What the insert leaves to the table's defaults: the audit state a new deposit has not got.
    assert model - set(written) == {"retracted_at", "retracted_reason"}
    assert set(written) <= model
