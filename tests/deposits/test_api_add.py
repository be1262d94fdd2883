from __future__ import annotations

from deposits.models import Deposit, IdempotencyEntry

NARROW = {"model": "gpt-5", "env": "prod"}


def test_it_adds_a_deposit_and_answers_201_with_the_documented_shape(api):
    answer = api.post("/users/alice/deposits", {"content": "  Alice prefers oat milk  ", "polarity": "open"})
    assert answer.status == 201
    assert answer.body["kind"] == "add_result"
    assert answer.body["is_idempotent_replay"] is False
    deposit = answer.body["deposit"]
    assert deposit["kind"] == "deposit"
    assert deposit["content"] == "Alice prefers oat milk"
    assert deposit["channel"] == "agent-a"
    assert set(deposit) == {
        "kind", "id", "content", "polarity", "evidence_grade", "scope", "user_id", "tags", "contradicts",
        "artifact_refs", "created_at", "author", "author_role", "repro_status", "task_id", "channel", "belief",
    }  # fmt: skip
    assert deposit["created_at"].endswith("+00:00") and "." in deposit["created_at"]


def test_a_gate_rejection_stores_nothing_not_even_the_key(api):
    answer = api.post(
        "/users/alice/deposits",
        {"content": "works everywhere", "polarity": "positive", "idempotency_key": "k-1"},
    )
    assert answer.status == 422
    assert answer.body["error"]["code"] == "gate_rejected"
    assert answer.body["error"]["gate_reason"] == (
        "positive/broad claim requires evidence_grade>=replicated; upgrade evidence or narrow scope "
        "(e.g. add model= or dataset=)"
    )
    assert not Deposit.objects.exists()
    assert not IdempotencyEntry.objects.exists()
