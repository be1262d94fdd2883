"""Idempotency keys: a documented recipe any language can compute, and the payload fingerprint."""

from __future__ import annotations

import hashlib
from datetime import date

from deposits.domain.idempotency import idempotency_key, payload_fingerprint


def blake2b_16(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def test_it_is_ak_plus_blake2b_16_of_the_parts_joined_by_the_unit_separator():
    assert idempotency_key("alice", "run-42", 3) == "ak_" + blake2b_16("alice\x1frun-42\x1f3")


def test_it_hashes_the_parts_as_utf_8():
    assert idempotency_key("café", "データ") == "ak_" + blake2b_16("café\x1fデータ")


def test_it_is_thirty_two_hex_digits_after_the_prefix():
    key = idempotency_key("x")
    assert key.startswith("ak_") and len(key) == 35
    assert int(key[3:], 16) >= 0


def test_it_gives_the_same_key_for_the_same_parts():
    assert idempotency_key("alice", "task-7", "step-2") == idempotency_key("alice", "task-7", "step-2")


def test_it_gives_different_keys_for_different_parts_or_order_or_grouping():
    keys = {
        idempotency_key("alice", "task-7"),
        idempotency_key("task-7", "alice"),
        idempotency_key("alicetask-7"),
        idempotency_key("alice", "task-8"),
    }
    assert len(keys) == 4


def test_it_fingerprints_a_payload_regardless_of_field_order():
    assert payload_fingerprint({"a": 1, "b": [1, 2]}) == payload_fingerprint({"b": [1, 2], "a": 1})
    assert payload_fingerprint({"a": 1}) != payload_fingerprint({"a": 2})


def test_the_fingerprint_of_a_known_payload_never_changes():
    # Keys stored within the last 24 hours hold this form: a change of encoder must keep it.
    payload = {"content": "café ☕", "scope": {"n": 3, "model": None}, "tags": ["a"], "at": date(2025, 6, 1)}
    canonical = '{"at":"2025-06-01","content":"café ☕","scope":{"model":null,"n":3},"tags":["a"]}'
    assert payload_fingerprint(payload) == blake2b_16(canonical)
