"""The benchmark's headline outcomes on the shipped fixture, and its loader on real-format data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from atlaso_site.bench.beliefs import (
    ARMS,
    DEFAULT_DATA,
    HEDGED_CONFIDENCE,
    BenchmarkDataError,
    BenchmarkResult,
    content_confidence,
    format_table,
    load_dataset,
    run_benchmark,
)
from beliefs.domain.values import normalize_value

LWW = "last-write-wins"
SEED = "seed rule (entry = r)"
FLOOR_ON = "atlaso rule, hedge floor on"
FLOOR_OFF = "atlaso rule, hedge floor off"


@pytest.fixture(scope="module")
def result() -> BenchmarkResult:
    return run_benchmark(load_dataset())


def accuracy(result: BenchmarkResult, system: str, arm: str) -> float:
    return result.cell(system, arm).accuracy


def test_the_fixture_is_at_least_sixty_longmemeval_knowledge_update_questions() -> None:
    items = json.loads(DEFAULT_DATA.read_text(encoding="utf-8"))
    assert len(items) >= 60
    assert len({item["question_id"] for item in items}) == len(items)
    assert len({item["atlaso"]["belief_key"] for item in items}) == len(items)
    for item in items:
        assert item["question_type"] == "knowledge-update"
        assert item["answer"] == item["atlaso"]["new_value"]
        assert len(item["haystack_dates"]) == len(item["haystack_sessions"]) == 2
        assert len(item["haystack_session_ids"]) == 2
        assert set(item["answer_session_ids"]) <= set(item["haystack_session_ids"])
        for session, value in zip(
            item["haystack_sessions"], (item["atlaso"]["old_value"], item["atlaso"]["new_value"]), strict=True
        ):
            evidence = [turn for turn in session if turn.get("has_answer")]
            assert [turn["role"] for turn in evidence] == ["user"]
            assert value in evidence[0]["content"]


def test_about_one_in_five_updates_is_hedged_and_the_rubric_sees_exactly_those() -> None:
    instances = load_dataset().instances
    hedged = [case for case in instances if case.hedged]
    assert 0.15 <= len(hedged) / len(instances) <= 0.25
    for case in instances:
        assert (content_confidence(case.new_wording) == HEDGED_CONFIDENCE) == case.hedged
        assert content_confidence(case.old_wording) > 0.5


def test_the_rubric_reads_hedges_down_and_emphasis_up() -> None:
    assert content_confidence("I think I've maybe switched to soy milk") == 0.4
    assert content_confidence("I’d say it's Kyoto") == 0.4
    assert content_confidence("Confirmed, verified, this is final: oat milk") == 0.95
    assert content_confidence("I take oat milk now") == 0.7


def test_attacks_on_a_low_trust_channel_change_nothing_this_rule_asserts(result: BenchmarkResult) -> None:
    for system in (FLOOR_ON, FLOOR_OFF):
        clean = result.cell(system, "clean")
        for arm in ("poison-5", "novel-5"):
            attacked = result.cell(system, arm)
            assert (attacked.correct, attacked.probabilities) == (clean.correct, clean.probabilities)


def test_this_rule_wins_flip_back_and_squatting_and_pays_for_it_on_lowtrust_fix(
    result: BenchmarkResult,
) -> None:
    assert accuracy(result, FLOOR_ON, "clean") == 1.0
    assert accuracy(result, FLOOR_ON, "flip-back") == 1.0
    assert accuracy(result, FLOOR_ON, "squatting") == 1.0
    assert accuracy(result, FLOOR_ON, "lowtrust-fix") == 0.0
    assert accuracy(result, FLOOR_OFF, "lowtrust-fix") == 0.0


def test_the_hedge_floor_recovers_the_hedged_updates(result: BenchmarkResult) -> None:
    hedged_share = sum(case.hedged for case in load_dataset().instances) / result.instances
    assert accuracy(result, FLOOR_OFF, "clean") == pytest.approx(1.0 - hedged_share)
    assert accuracy(result, FLOOR_ON, "hedged-update") == 1.0
    assert accuracy(result, FLOOR_OFF, "hedged-update") == 0.0
    # Asserted, but at r = 0.55: below θ = 0.6, so every one of them is reported uncertain.
    assert result.cell(FLOOR_ON, "hedged-update").mean_probability == pytest.approx(0.55)


def test_the_seed_rule_loses_flip_back_and_squatting_and_the_hedged_updates(result: BenchmarkResult) -> None:
    hedged_share = sum(case.hedged for case in load_dataset().instances) / result.instances
    assert accuracy(result, SEED, "clean") == pytest.approx(1.0 - hedged_share)
    # Only the hedged updates (inert, so the old value simply stays) survive flip-back.
    assert accuracy(result, SEED, "flip-back") == pytest.approx(hedged_share)
    assert accuracy(result, SEED, "squatting") == 0.0
    assert accuracy(result, SEED, "poison-5") == accuracy(result, SEED, "clean")


def test_no_entry_mass_in_the_seed_sweep_both_learns_and_resists_a_novel_claim(
    result: BenchmarkResult,
) -> None:
    for entry in ("0.02", "0.20", "0.30", "0.40", "0.50"):
        system = f"seed sweep (entry {entry})"
        learns = accuracy(result, system, "clean") == 1.0
        resists = accuracy(result, system, "novel-5") == 1.0
        assert not (learns and resists)
    assert accuracy(result, "seed sweep (entry 0.02)", "clean") == 0.0
    assert accuracy(result, "seed sweep (entry 0.50)", "novel-5") == 0.0


def test_last_write_wins_hands_the_belief_to_whoever_writes_last(result: BenchmarkResult) -> None:
    assert accuracy(result, LWW, "clean") == 1.0
    assert accuracy(result, LWW, "poison-5") == 0.0
    assert accuracy(result, LWW, "novel-5") == 0.0


def test_the_table_has_a_row_per_system_and_a_column_per_arm(result: BenchmarkResult) -> None:
    table = format_table(result)
    for name in result.systems:
        assert name in table
    header = next(line for line in table.splitlines() if line.startswith("system"))
    assert header.split()[1:] == list(ARMS)
    assert json.loads(json.dumps(result.to_dict()))["instances"] == result.instances


def _turn(role: str, content: str, evidence: bool = False) -> dict[str, object]:
    turn: dict[str, object] = {"role": role, "content": content}
    if evidence:
        turn["has_answer"] = True
    return turn


def test_real_longmemeval_items_take_their_values_from_the_evidence_turns(tmp_path: Path) -> None:
    item = {
        "question_id": "e3038f8c",
        "question_type": "knowledge-update",
        "question": "How many bikes do I own?",
        "answer": "four",
        "question_date": "2023/06/01 (Thu) 10:00",
        # Listed out of order on purpose: the loader orders sessions by date.
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/03/02 (Thu) 14:05"],
        "haystack_session_ids": ["s_new", "s_old"],
        "haystack_sessions": [
            [
                _turn("user", "I now own four bikes,   after buying a gravel bike.", True),
                _turn("assistant", "Nice."),
            ],
            [_turn("user", "Hi"), _turn("user", "I own three bikes.", True), _turn("assistant", "Great.")],
        ],
        "answer_session_ids": ["s_new", "s_old"],
    }
    other = {**item, "question_id": "x", "question_type": "temporal-reasoning"}
    lacking = {
        **item,
        "question_id": "y",
        "haystack_sessions": [[_turn("user", "Hi")], item["haystack_sessions"][1]],
    }
    path = tmp_path / "longmemeval_oracle.json"
    path.write_text(json.dumps([item, other, lacking]), encoding="utf-8")
    dataset = load_dataset(path)
    assert dataset.skipped == 1
    (case,) = dataset.instances
    assert case.old_value == "I own three bikes."
    assert case.new_value == "I now own four bikes, after buying a gravel bike."
    assert case.old_at < case.new_at
    assert case.belief_key == "longmemeval:e3038f8c"
    result = run_benchmark(dataset)
    assert accuracy(result, FLOOR_ON, "clean") == 1.0
    assert accuracy(result, FLOOR_ON, "flip-back") == 1.0
    assert normalize_value(case.new_value) != normalize_value(case.old_value)


def test_a_file_without_usable_questions_is_refused_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text("[]", encoding="utf-8")
    with pytest.raises(BenchmarkDataError, match="has_answer"):
        load_dataset(path)
    with pytest.raises(BenchmarkDataError, match="no data file"):
        load_dataset(tmp_path / "missing.json")


def test_a_question_missing_longmemeval_fields_is_refused_by_id(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text(
        json.dumps([{"question_id": "q1", "question_type": "knowledge-update"}]), encoding="utf-8"
    )
    with pytest.raises(BenchmarkDataError, match=r"'q1'.*haystack_dates"):
        load_dataset(path)
