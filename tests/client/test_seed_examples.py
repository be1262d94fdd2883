"""Every code example of seeds 000–002 that talks to memory, run verbatim against a served Atlaso.

Each example below is copied from the seed, character for character, and run with only
ATLASO_BASE_URL and ATLASO_API_KEY set; what it prints or asserts must hold. The seeds write
to "alice", so the examples share her memory, as they would in one reader's session.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

from atlaso import AddManyResult, Deposit, DepositRejectedError, IdempotencyKeyConflict, InputValidationError
from deposits.domain.idempotency import idempotency_key as servers_idempotency_key

SEEDS = Path(__file__).resolve().parents[3] / "shared" / "seeds"

# seed 000, "Writing one"
WRITING_ONE = """\
from atlaso import Memory, Scope

m = Memory()
user = m.for_user("alice")

user.add(
    "Threshold of 0.7 over-flags in production",
    polarity="negative",
    evidence_grade="observed",
    scope=Scope(model="gpt-5", env="prod"),
    tags=["threshold", "fp-rate"],
)
"""

# seed 000, "Immutability is a feature"
IMMUTABLE = """\
m.update("anything")
"""

# seed 000, "Pedagogical errors"
PEDAGOGICAL = """\
user.add("hello", polarity="strong")
"""
PEDAGOGICAL_MESSAGE = """\
polarity must be one of:
  "positive"   — claim that X works / is true
  "negative"   — claim that X doesn't work / failed
  "cautionary" — claim with caveats
  "open"       — note or open question"""

# seed 000, "Filtering recall"
FILTERING = """\
hits = user.recall(
    "threshold",
    scope=Scope(env="prod"),       # only deposits scoped to env=prod
)
"""

# seed 000, ".explain() in plain English" (and seed 001's)
EXPLAIN = """\
print(results.explain())
"""

# seed 000, "The helper"
HELPER = """\
from atlaso import idempotency_key

key = idempotency_key("alice", "Alice prefers oat milk", "2026-05-11")
"""

# seed 000, "Bulk imports" (`rows` is the reader's own: the seed leaves it to them)
BULK = """\
from atlaso import AddItem, idempotency_key

items = [
    AddItem(
        content=row["text"],
        idempotency_key=idempotency_key("preferences-v1", row["id"]),
    )
    for row in rows
]
result = user.add_many(items)
print(result.committed, "new")
print(result.duplicates, "replays")
print(result.failed, "rejected")
"""

# seed 001, "When conflict fires"
WHEN_CONFLICT_FIRES = """\
from atlaso import Memory, Scope

m = Memory()
user = m.for_user("alice")

# env= gives narrow-negative the provenance the gate requires
scope = Scope(model="gpt-5", dataset="prod", env="prod")

user.add("threshold 0.7 is optimal",   polarity="positive", scope=scope, evidence_grade="observed")
user.add("threshold 0.7 over-flags",   polarity="negative", scope=scope, evidence_grade="observed")

results = user.recall("threshold", scope=scope)

print(results.has_disagreement)         # True
print(results.is_confident)             # False

for hit in results:
    print(hit.has_disagreement, hit.conflict_peers, hit.content)
"""

# seed 002, "Diagnostics"
DIAGNOSTICS = """\
diag = user.health(window_days=30)
print(diag.fmi)         # e.g. 72
print(diag.explain())
"""

EXAMPLES = {
    "000": [WRITING_ONE, IMMUTABLE, PEDAGOGICAL, FILTERING, EXPLAIN, HELPER, BULK],
    "001": [WHEN_CONFLICT_FIRES, EXPLAIN],
    "002": [DIAGNOSTICS],
}

EXPLAIN_LINE = re.compile(
    r"^(\d+) hits? across (\d+) bags? · (\d+) bags? in conflict · (not confident|confident)$"
)


def run(code: str, namespace: dict[str, Any]) -> list[str]:
    """Run an example in `namespace` (a reader's session) and return the lines it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "<seed example>", "exec"), namespace)
    return printed.getvalue().splitlines()


def test_the_copies_are_the_seeds_own_words():
    if not SEEDS.is_dir():
        pytest.skip(f"the seeds are not beside this checkout ({SEEDS})")
    for seed, examples in EXAMPLES.items():
        (text,) = [p.read_text() for p in SEEDS.glob(f"{seed}_*.txt")]
        for example in examples:
            assert example in text, f"seed {seed} no longer holds:\n{example}"


def test_writing_one_stores_the_claim(client_env):
    session: dict[str, Any] = {}
    assert run(WRITING_ONE, session) == []
    stored = session["user"].list_recent(limit=1).items[0]
    assert stored.content == "Threshold of 0.7 over-flags in production"
    assert (stored.polarity, stored.evidence_grade) == ("negative", "observed")
    assert (stored.scope.model, stored.scope.env) == ("gpt-5", "prod")
    assert stored.tags == ("threshold", "fp-rate")
    assert stored.user_id == "alice"


def test_update_raises_attribute_error_pointing_at_contradict(client_env):
    session: dict[str, Any] = {}
    run(WRITING_ONE, session)
    with pytest.raises(AttributeError) as raised:
        run(IMMUTABLE, session)
    assert str(raised.value) == (
        'deposits are immutable. Use m.contradict(new_text, contradicts=[old.id], reason="…") instead.'
    )


def test_a_bad_polarity_is_refused_before_sending_with_the_seeds_message(client_env):
    session: dict[str, Any] = {}
    run(WRITING_ONE, session)
    before = session["user"].peek().total_count
    with pytest.raises(InputValidationError) as raised:
        run(PEDAGOGICAL, session)
    assert str(raised.value) == PEDAGOGICAL_MESSAGE
    assert raised.value.field == "polarity"
    assert raised.value.allowed == ("positive", "negative", "cautionary", "open")
    assert session["user"].peek().total_count == before


def test_filtering_recall_returns_only_env_prod_deposits(client_env):
    session: dict[str, Any] = {}
    run(WRITING_ONE, session)
    session["user"].add("threshold 0.5 is fine in staging", scope=session["Scope"](env="staging"))
    run(FILTERING, session)
    hits = session["hits"]
    assert hits, "the example's own deposit matches"
    assert {hit.scope.env for hit in hits} == {"prod"}
    assert "Threshold of 0.7 over-flags in production" in {hit.content for hit in hits}


def test_when_conflict_fires_prints_what_the_seed_says(client_env):
    session: dict[str, Any] = {}
    lines = run(WHEN_CONFLICT_FIRES, session)
    assert lines[:2] == ["True", "False"]
    results = session["results"]
    assert len(results) == 2
    ids = {hit.content: hit.id for hit in results}
    assert sorted(lines[2:]) == sorted(
        [
            f"True ('{ids['threshold 0.7 over-flags']}',) threshold 0.7 is optimal",
            f"True ('{ids['threshold 0.7 is optimal']}',) threshold 0.7 over-flags",
        ]
    )
    (explained,) = run(EXPLAIN, session)
    assert explained == "2 hits across 1 bag · 1 bag in conflict · not confident"


def test_explain_reads_as_the_seed_shows_for_any_recall(client_env):
    session: dict[str, Any] = {}
    run(WRITING_ONE, session)
    session["results"] = session["user"].recall("threshold")
    (explained,) = run(EXPLAIN, session)
    match = EXPLAIN_LINE.match(explained)
    assert match, explained
    results = session["results"]
    assert int(match[1]) == len(results)
    assert (int(match[2]), int(match[3])) == (results.bag_count, results.conflict_bag_count)
    assert (match[4] == "confident") is results.is_confident


def test_the_helper_makes_the_servers_key(client_env):
    session: dict[str, Any] = {}
    run(HELPER, session)
    key = session["key"]
    assert re.fullmatch(r"ak_[0-9a-f]{32}", key)
    assert key == servers_idempotency_key("alice", "Alice prefers oat milk", "2026-05-11")


def test_a_bulk_import_commits_once_and_replays_after(client_env):
    rows = [
        {"id": "row-1", "text": "Alice prefers oat milk"},
        {"id": "row-2", "text": "Alice takes her coffee black on Mondays"},
        {"id": "row-3", "text": "Alice is allergic to peanuts"},
    ]
    session: dict[str, Any] = {"rows": rows}
    run(WRITING_ONE, session)
    first = run(BULK, session)
    result: AddManyResult = session["result"]
    assert (len(result.committed), len(result.duplicates), len(result.failed)) == (3, 0, 0)
    assert first[0].endswith(" new") and first[1] == "() replays" and first[2] == "() rejected"
    assert all(isinstance(d, Deposit) for d in result.committed)

    run(BULK, session)
    again: AddManyResult = session["result"]
    assert (len(again.committed), len(again.duplicates), len(again.failed)) == (0, 3, 0)
    assert {d.id for d in again.duplicates} == {d.id for d in result.committed}


def test_same_key_with_different_content_is_a_conflict_naming_the_existing_deposit(client_env):
    session: dict[str, Any] = {}
    run(WRITING_ONE + HELPER, session)
    user, key = session["user"], session["key"]
    first = user.add("Alice prefers oat milk", idempotency_key=key)
    assert user.add("Alice prefers oat milk", idempotency_key=key).is_idempotent_replay
    with pytest.raises(IdempotencyKeyConflict) as raised:
        user.add("Alice prefers soy milk", idempotency_key=key)
    assert raised.value.existing_id == first.id
    assert raised.value.idempotency_key == key


def test_a_weak_claim_is_refused_by_the_gate_with_its_reason(client_env):
    session: dict[str, Any] = {}
    run(WRITING_ONE, session)
    with pytest.raises(DepositRejectedError) as raised:
        session["user"].add("Alice loves every cheese", polarity="positive")
    assert raised.value.gate_reason.startswith("positive/broad claim requires evidence_grade>=replicated")


def test_diagnostics_prints_the_fmi_and_its_verdict(client_env):
    session: dict[str, Any] = {}
    run(WRITING_ONE, session)
    fmi, explained = run(DIAGNOSTICS, session)
    diag = session["diag"]
    assert fmi == str(diag.fmi) and 0 <= diag.fmi <= 100
    assert re.match(rf"^Memory is (healthy|usable|unreliable) \(FMI {diag.fmi}/100\)\. \S", explained)
    assert diag.window_days == 30 and diag.deposit_count >= 1


def test_a_deposits_to_dict_has_the_seeds_stable_shape(client_env):
    session: dict[str, Any] = {}
    run(WRITING_ONE, session)
    deposit = session["user"].list_recent(limit=1).items[0]
    shape = deposit.to_dict()
    seed_keys = ["kind", "id", "content", "polarity", "evidence_grade", "scope", "user_id", "tags",
                 "contradicts", "artifact_refs", "created_at", "author", "author_role", "repro_status",
                 "task_id"]  # fmt: skip
    assert list(shape)[: len(seed_keys)] == seed_keys
    assert shape["kind"] == "deposit"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00", shape["created_at"])
    assert set(shape["scope"]) == {"model", "dataset", "env", "version", "n", "seed", "note"}


def test_a_hit_is_not_a_deposit(client_env):
    session: dict[str, Any] = {}
    run(WHEN_CONFLICT_FIRES, session)
    hit = session["results"][0]
    assert not isinstance(hit, Deposit)
    assert isinstance(hit.deposit, Deposit)
    assert hit.content == hit.deposit.content
