"""Each enum the client spells twice, as a Literal type and as the values it explains, agrees."""

from __future__ import annotations

from typing import get_args

from atlaso import _types, _validation


def test_each_literal_type_holds_the_values_its_refusal_explains_in_order():
    assert get_args(_types.Polarity) == tuple(_validation.POLARITY_MEANINGS)
    assert get_args(_types.EvidenceGrade) == tuple(_validation.EVIDENCE_GRADE_MEANINGS)
    assert get_args(_types.OnGateReject) == tuple(_validation.ON_GATE_REJECT_MEANINGS)
    assert get_args(_types.RecallMode) == tuple(_validation.RECALL_MODE_MEANINGS)
