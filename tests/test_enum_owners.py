"""Each enum has one owner, and the places that must spell it again are pinned to it.

The kernel's wire Literals, which may not import an app, and the client, which imports nothing of
the server: a value added in one place and forgotten in another fails.
"""

from __future__ import annotations

from typing import get_args

from atlaso import _validation as client
from atlaso_site import wire
from atlaso_site.job_runs.models import REPORTED_STATUSES, Trigger
from deposits import schemas as deposit_schemas
from deposits.domain import meaning, types
from diagnostics import schemas as diagnostics_schemas


def literal(annotation: object) -> tuple[str, ...]:
    """The values of a Literal, through `X | None` and Annotated wrappers."""
    values = get_args(annotation)
    if values and all(isinstance(v, str) for v in values):
        return values
    return next(literal(arg) for arg in values if get_args(arg))


def field(schema: type, name: str) -> tuple[str, ...]:
    return literal(schema.model_fields[name].annotation)


def test_the_wire_literals_are_the_domains_tuples():
    assert get_args(wire.Polarity) == types.POLARITIES
    assert get_args(wire.EvidenceGrade) == types.EVIDENCE_GRADES
    assert get_args(wire.ReproStatus) == types.REPRO_STATUSES


def test_the_request_enums_are_the_domains():
    assert field(deposit_schemas.BulkIn, "on_gate_reject") == tuple(types.BULK_MODE_MEANINGS)
    assert field(deposit_schemas.RetractQuery, "mode") == tuple(types.RETRACT_MODE_MEANINGS)
    assert field(deposit_schemas.RecallQuery, "mode") == meaning.MODES
    assert field(deposit_schemas.SearchResultOut, "matched_by") == meaning.MATCHED_BY


def test_the_job_enums_are_the_run_records():
    assert get_args(diagnostics_schemas.JobRunStatus) == REPORTED_STATUSES
    assert get_args(diagnostics_schemas.JobTrigger) == tuple(Trigger.values)


def test_the_clients_enums_and_their_meanings_are_the_servers():
    assert client.POLARITY_MEANINGS == types.POLARITY_MEANINGS
    assert client.EVIDENCE_GRADE_MEANINGS == types.EVIDENCE_GRADE_MEANINGS
    assert client.ON_GATE_REJECT_MEANINGS == types.BULK_MODE_MEANINGS
    assert client.RECALL_MODE_MEANINGS == meaning.MODE_MEANINGS


def test_the_clients_user_id_rule_is_the_servers():
    from atlaso_site.lib.user_ids import USER_ID_PATTERN, USER_ID_RULE

    assert f"^{client.USER_ID.pattern}$" == USER_ID_PATTERN.pattern
    assert client.USER_ID_RULE == USER_ID_RULE
