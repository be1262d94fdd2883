from __future__ import annotations

import uuid

from deposits.models import Contradiction, Deposit, IdempotencyEntry, ScopeBag

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


def test_it_stores_every_field_it_answers_with(api):
    sent = {
        "content": "Threshold 0.7 over-flags in production",
        "polarity": "negative",
        "evidence_grade": "observed",
        "scope": {
            **NARROW,
            "dataset": "claims-q1",
            "version": "2.1",
            "n": 500,
            "seed": 0,
            "note": "March run",
        },
        "tags": ["threshold", "prod"],
        "artifact_refs": ["s3://runs/7/report.html"],
        "author": "eval-bot",
        "author_role": "evaluator",
        "task_id": "task-9",
        "repro_status": "replicated",
    }
    deposit = api.post("/users/alice/deposits", sent).body["deposit"]
    stored = api.get(f"/users/alice/deposits/{deposit['id']}").body
    for field in (
        "content",
        "polarity",
        "evidence_grade",
        "tags",
        "artifact_refs",
        "author",
        "author_role",
        "task_id",
        "repro_status",
    ):
        assert deposit[field] == stored[field] == sent[field]
    assert deposit["scope"] == stored["scope"] == sent["scope"]
    assert deposit["user_id"] == "alice"
    assert deposit["contradicts"] == []
    assert deposit["belief"] is None


def test_it_defaults_an_omitted_claim_to_an_open_anecdotal_unscoped_note(api):
    deposit = api.post("/users/alice/deposits", {"content": "likes tea"}).body["deposit"]
    assert (deposit["polarity"], deposit["evidence_grade"], deposit["repro_status"]) == (
        "open",
        "anecdotal",
        "unreplicated",
    )
    assert deposit["scope"] == dict.fromkeys(("model", "dataset", "env", "version", "n", "seed", "note"))


def test_it_takes_the_channel_from_the_key_never_from_the_payload(api):
    answer = api.post("/users/alice/deposits", {"content": "x", "channel": "human_review"})
    assert answer.status == 422
    assert answer.body["error"]["field"] == "channel"
    assert not Deposit.objects.exists()


def test_it_keeps_the_grade_a_red_team_author_sent_when_the_bump_admits_the_claim(api):
    answer = api.post(
        "/users/alice/deposits",
        {"content": "jailbreak works on v2", "polarity": "negative", "author_role": "Red-Team"},
    )
    assert answer.status == 201
    assert answer.body["deposit"]["evidence_grade"] == "anecdotal"
    assert Deposit.objects.get().evidence_grade == "anecdotal"


def test_it_rejects_the_same_claim_from_an_author_who_is_not_red_team(api):
    answer = api.post(
        "/users/alice/deposits",
        {"content": "jailbreak works on v2", "polarity": "negative", "author_role": "blue-team"},
    )
    assert answer.status == 422
    assert answer.body["error"]["code"] == "gate_rejected"
    assert answer.body["error"]["gate_reason"].startswith(
        "negative/broad claim requires evidence_grade>=observed"
    )


def test_a_rejected_write_leaves_no_deposit_bag_edge_or_key_behind(api):
    earlier = api.post("/users/alice/deposits", {"content": "an earlier note"}).body["deposit"]
    before = list(ScopeBag.objects.values_list("id", "live_open"))
    answer = api.post(
        "/users/alice/deposits",
        {
            "content": "it works",
            "polarity": "positive",
            "evidence_grade": "anecdotal",
            "scope": {"model": "new-model", "dataset": "new-set"},
            "contradicts": [earlier["id"]],
            "idempotency_key": "rejected-1",
        },
    )
    assert answer.status == 422
    assert answer.body["error"]["code"] == "gate_rejected"
    assert list(Deposit.objects.values_list("id", flat=True)) == [uuid.UUID(earlier["id"])]
    assert list(ScopeBag.objects.values_list("id", "live_open")) == before
    assert not Contradiction.objects.exists()
    assert not IdempotencyEntry.objects.exists()


def test_a_write_that_fails_validation_leaves_nothing_behind(api):
    answer = api.post(
        "/users/alice/deposits",
        {"content": "x", "tags": [""], "scope": {"model": "m"}, "idempotency_key": "invalid-1"},
    )
    assert answer.status == 422
    assert answer.body["error"]["field"] == "tags"
    assert not Deposit.objects.exists()
    assert not ScopeBag.objects.exists()
    assert not IdempotencyEntry.objects.exists()


def test_it_answers_422_with_the_missing_ids_when_contradicts_names_unknown_deposits(api):
    known = api.post("/users/alice/deposits", {"content": "known"}).body["deposit"]["id"]
    bobs = api.post("/users/bob/deposits", {"content": "bob's"}).body["deposit"]["id"]
    unknown = str(uuid.uuid4())
    answer = api.post(
        "/users/alice/deposits",
        {"content": "x", "contradicts": [known, unknown, "not-a-uuid", bobs], "idempotency_key": "m-1"},
    )
    assert answer.status == 422
    assert answer.body["error"]["code"] == "missing_contradicts"
    assert answer.body["error"]["missing"] == [unknown, "not-a-uuid", bobs]
    assert Deposit.objects.count() == 2
    assert not Contradiction.objects.exists()
    assert not IdempotencyEntry.objects.exists()


def test_it_rejects_an_invalid_user_id_in_the_path(api):
    answer = api.post("/users/-alice/deposits", {"content": "x"})
    assert answer.status == 422
    assert answer.body["error"]["field"] == "user_id"
    assert not Deposit.objects.exists()
