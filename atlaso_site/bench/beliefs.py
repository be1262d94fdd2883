"""LongMemEval-style knowledge-update benchmark: recency, the seed's rule and this rule, side by side.

Each instance is a two-session supersession (an old value, then a fresh one). Its evidence
turns feed the update rules directly: no extractor, retriever or LLM, so the numbers are the
update rule's. Run it with `python -m atlaso_site.bench.beliefs` or `manage.py bench_beliefs`.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from atlaso_site.bench import seed_rule
from atlaso_site.bench.seed_rule import SeedSettings
from beliefs.domain import rule
from beliefs.domain.rule import Observation, RuleSettings, claim_order
from beliefs.domain.tiers import DEFAULT_CEILINGS
from beliefs.domain.values import MAX_VALUE_LENGTH, collapse_whitespace, normalize_value

DEFAULT_DATA = Path(__file__).resolve().parent / "fixtures" / "knowledge_update.json"
ARMS = (
    "clean",
    "poison-5",
    "novel-5",
    "lowtrust-fix",
    "flip-back",
    "squatting",
    "hedged-update",
)
ATTACK_REPEATS = 5
TRUSTED_TIER = "user_direct"
ATTACK_TIER = "web_fetch"
# The attacker's wording scores near 1.0 on any hedging rubric: the ceiling must cap it.
ATTACK_WORDING = "Confirmed, verified, this is final: {value}"
# The hedged-update arm hedges every update, so all instances measure it, not one in five.
FORCED_HEDGE = "I think, maybe: {wording}"
SEED_SWEEP = (0.02, 0.2, 0.3, 0.4, 0.5)
LONGMEMEVAL_DATE = "%Y/%m/%d (%a) %H:%M"

# A deterministic stand-in for the content-confidence an extractor would emit.
HEDGED_CONFIDENCE = 0.4
NEUTRAL_CONFIDENCE = 0.7
EMPHATIC_CONFIDENCE = 0.95
HEDGES = re.compile(
    r"\b(i think|i'd say|i would say|i guess|i believe|maybe|probably|perhaps|possibly|"
    r"might|not sure|kind of|sort of)\b",
    re.IGNORECASE,
)
EMPHASIS = re.compile(
    r"\b(confirmed|verified|final|definitely|certainly|absolutely|guaranteed)\b|100%",
    re.IGNORECASE,
)


class BenchmarkDataError(ValueError):
    """The data file cannot be read as LongMemEval knowledge-update questions."""


def content_confidence(wording: str) -> float:
    """Score how sure the wording sounds: hedges lower it, emphatic words raise it."""
    # Straight apostrophes so "I’d say" and "I'd say" score alike.
    text = wording.replace("\u2019", "'")
    if HEDGES.search(text):
        return HEDGED_CONFIDENCE
    if EMPHASIS.search(text):
        return EMPHATIC_CONFIDENCE
    return NEUTRAL_CONFIDENCE


@dataclass(frozen=True, slots=True)
class Instance:
    """One supersession: the old and fresh values, the turns that said them, and when."""

    question_id: str
    belief_key: str
    old_value: str
    new_value: str
    old_wording: str
    new_wording: str
    old_at: datetime
    new_at: datetime
    hedged: bool


@dataclass(frozen=True, slots=True)
class Claim:
    """One claim in a trial: a value, the words it came in, the channel's tier, and when."""

    value: str
    wording: str
    tier: str
    observed_at: datetime


@dataclass(frozen=True, slots=True)
class Trial:
    """The claims one arm makes for one instance, in arrival order, and the right answer."""

    claims: tuple[Claim, ...]
    expected: str


def parse_date(text: str) -> datetime:
    """Read a LongMemEval date ("2023/05/20 (Sat) 02:21") or ISO 8601, as UTC when naive."""
    try:
        moment = datetime.strptime(text, LONGMEMEVAL_DATE)
    except ValueError:
        moment = datetime.fromisoformat(text)
    return moment if moment.utcoffset() is not None else moment.replace(tzinfo=UTC)


def _evidence_turn(session: Sequence[Mapping[str, Any]]) -> str | None:
    """The first evidence turn the user spoke (any evidence turn when none is the user's)."""
    evidence = [turn for turn in session if turn.get("has_answer")]
    spoken = [turn for turn in evidence if turn.get("role") == "user"] or evidence
    return str(spoken[0]["content"]) if spoken else None


def _as_value(text: str) -> str:
    """A turn used as a value: whitespace collapsed and cut to the value length limit."""
    return collapse_whitespace(text)[:MAX_VALUE_LENGTH].strip()


def instance_from_item(item: Mapping[str, Any]) -> Instance | None:
    """Read one question; None when it lacks evidence in two sessions or nothing changed.

    Items written for this project carry an `atlaso` key with the canonical values; real
    LongMemEval items do not, so their evidence turns themselves are the values.
    """
    dated = sorted(
        zip(item["haystack_dates"], item["haystack_sessions"], strict=True),
        key=lambda pair: parse_date(pair[0]),
    )
    with_evidence = [
        (parse_date(date), turn) for date, session in dated if (turn := _evidence_turn(session)) is not None
    ]
    if len(with_evidence) < 2:
        return None
    (old_at, old_wording), (new_at, new_wording) = with_evidence[0], with_evidence[-1]
    extra = item.get("atlaso")
    if extra is not None:
        old_value, new_value = extra["old_value"], extra["new_value"]
        belief_key, hedged = extra["belief_key"], bool(extra["hedged"])
    else:
        old_value, new_value = _as_value(old_wording), _as_value(new_wording)
        belief_key = f"longmemeval:{item['question_id']}"
        hedged = content_confidence(new_wording) <= HEDGED_CONFIDENCE
    if not old_value or normalize_value(old_value) == normalize_value(new_value):
        return None
    return Instance(
        question_id=str(item["question_id"]),
        belief_key=belief_key,
        old_value=old_value,
        new_value=new_value,
        old_wording=old_wording,
        new_wording=new_wording,
        old_at=old_at,
        new_at=new_at,
        hedged=hedged,
    )


@dataclass(frozen=True, slots=True)
class Dataset:
    """The instances read from a file, and how many questions were left out and why."""

    path: str
    instances: tuple[Instance, ...]
    skipped: int


def _shown(path: Path) -> str:
    """The path relative to the working directory when inside it, so tables stay portable."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _question_list(source: Path) -> list[Any]:
    """The JSON list a data file holds."""
    try:
        items = json.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise BenchmarkDataError(f"no data file at {source}") from error
    except json.JSONDecodeError as error:
        raise BenchmarkDataError(f"{source} is not JSON: {error}") from error
    if not isinstance(items, list):
        raise BenchmarkDataError(f"{source} must hold a JSON list of questions")
    return items


def load_dataset(path: Path | str = DEFAULT_DATA) -> Dataset:
    """Read knowledge-update questions from our fixture or LongMemEval's own JSON."""
    source = Path(path)
    items = _question_list(source)
    questions = [
        item for item in items if isinstance(item, dict) and item.get("question_type") == "knowledge-update"
    ]
    instances: list[Instance] = []
    for item in questions:
        try:
            found = instance_from_item(item)
        except (KeyError, TypeError, ValueError) as error:
            raise BenchmarkDataError(
                f"question {item.get('question_id')!r} in {source} is not in LongMemEval's format: "
                f"{type(error).__name__}: {error}"
            ) from error
        if found is not None:
            instances.append(found)
    if not instances:
        raise BenchmarkDataError(
            f"{source} has no knowledge-update question with evidence turns "
            "(has_answer: true) in two sessions"
        )
    return Dataset(_shown(source), tuple(instances), skipped=len(questions) - len(instances))


def _novel_value(instances: Sequence[Instance], index: int) -> str:
    """Another instance's fresh value that this instance has never held."""
    own = {normalize_value(instances[index].old_value), normalize_value(instances[index].new_value)}
    for step in range(1, len(instances)):
        candidate = instances[(index + step) % len(instances)].new_value
        if normalize_value(candidate) not in own:
            return candidate
    return f"not {instances[index].new_value}"


def build_trial(arm: str, instances: Sequence[Instance], index: int) -> Trial:
    """The claims `arm` makes for instance `index`, and the value a correct memory asserts."""
    case = instances[index]
    old = Claim(case.old_value, case.old_wording, TRUSTED_TIER, case.old_at)
    new = Claim(case.new_value, case.new_wording, TRUSTED_TIER, case.new_at)

    def attack(value: str) -> list[Claim]:
        return [
            Claim(value, ATTACK_WORDING.format(value=value), ATTACK_TIER, case.new_at + timedelta(hours=k))
            for k in range(1, ATTACK_REPEATS + 1)
        ]

    if arm == "clean":
        return Trial((old, new), case.new_value)
    if arm == "poison-5":
        return Trial((old, new, *attack(case.old_value)), case.new_value)
    if arm == "novel-5":
        return Trial((old, new, *attack(_novel_value(instances, index))), case.new_value)
    if arm == "lowtrust-fix":
        return Trial((old, Claim(case.new_value, case.new_wording, ATTACK_TIER, case.new_at)), case.new_value)
    if arm == "flip-back":
        again = Claim(case.old_value, case.old_wording, TRUSTED_TIER, case.new_at + timedelta(days=1))
        return Trial((old, new, again), case.old_value)
    if arm == "squatting":
        squat = Claim(case.new_value, case.new_wording, ATTACK_TIER, case.old_at - timedelta(days=1))
        return Trial((squat, old, new), case.new_value)
    if arm == "hedged-update":
        hedged = Claim(
            case.new_value, FORCED_HEDGE.format(wording=case.new_wording), TRUSTED_TIER, case.new_at
        )
        return Trial((old, hedged), case.new_value)
    raise ValueError(f"unknown arm {arm!r}; the arms are {', '.join(ARMS)}")


def observations_for(claims: Iterable[Claim], ceilings: Mapping[str, float]) -> list[Observation]:
    """Turn claims into observations: κ from the tier table, c from the wording."""
    return [
        Observation(
            value=claim.value,
            observed_at=claim.observed_at,
            ceiling=ceilings[claim.tier],
            content_confidence=content_confidence(claim.wording),
            sequence=arrival,
        )
        for arrival, claim in enumerate(claims)
    ]


class System(Protocol):
    """Something that reads a belief's observations and asserts a fact with a probability."""

    @property
    def name(self) -> str: ...

    def decide(self, observations: Sequence[Observation]) -> tuple[str | None, float]: ...


@dataclass(frozen=True, slots=True)
class LastWriteWins:
    """Recency: the latest claim is the fact, asserted with certainty."""

    name: str = "last-write-wins"

    def decide(self, observations: Sequence[Observation]) -> tuple[str | None, float]:
        """Assert the value claimed last."""
        ordered = claim_order(observations)
        return (ordered[-1].value, 1.0) if ordered else (None, 0.0)


@dataclass(frozen=True, slots=True)
class SeedSystem:
    """The seed's published rule."""

    settings: SeedSettings

    @property
    def name(self) -> str:
        return self.settings.label

    def decide(self, observations: Sequence[Observation]) -> tuple[str | None, float]:
        """Fold the observations with the seed's rule and read its verdict."""
        state, _ = seed_rule.fold(observations, self.settings)
        seen = seed_rule.verdict(state, self.settings, now=state.updated_at)
        return seen.fact, seen.probability


@dataclass(frozen=True, slots=True)
class AtlasoSystem:
    """This product's rule."""

    settings: RuleSettings

    @property
    def name(self) -> str:
        return f"atlaso rule, hedge floor {'on' if self.settings.hedge_floor else 'off'}"

    def decide(self, observations: Sequence[Observation]) -> tuple[str | None, float]:
        """Fold the observations with beliefs.md's rule and read its verdict."""
        state, _ = rule.fold(observations, self.settings)
        seen = rule.verdict(state, self.settings, now=state.updated_at)
        return seen.fact, seen.probability


def default_systems() -> tuple[System, ...]:
    """Every system the spec compares, in table order."""
    return (
        LastWriteWins(),
        SeedSystem(SeedSettings()),
        *(SeedSystem(SeedSettings.sweep(entry)) for entry in SEED_SWEEP),
        AtlasoSystem(RuleSettings(hedge_floor=False)),
        AtlasoSystem(RuleSettings(hedge_floor=True)),
    )


@dataclass(frozen=True, slots=True)
class Cell:
    """One system on one arm: how often it asserted the right value, and how sure it was."""

    system: str
    arm: str
    trials: int
    correct: int
    asserted: int
    probabilities: tuple[float, ...] = field(repr=False)

    @property
    def accuracy(self) -> float:
        """Share of trials whose asserted fact is the expected value."""
        return self.correct / self.trials if self.trials else 0.0

    @property
    def mean_probability(self) -> float | None:
        """Mean probability of the asserted fact, over trials that asserted one."""
        return sum(self.probabilities) / len(self.probabilities) if self.probabilities else None

    def to_dict(self) -> dict[str, Any]:
        """The cell as JSON types."""
        return {
            "system": self.system,
            "arm": self.arm,
            "trials": self.trials,
            "correct": self.correct,
            "asserted": self.asserted,
            "accuracy": self.accuracy,
            "mean_probability": self.mean_probability,
        }


@dataclass(frozen=True, slots=True)
class BenchmarkResult:
    """Every cell of one run, with the data it ran on."""

    data: str
    instances: int
    skipped: int
    arms: tuple[str, ...]
    systems: tuple[str, ...]
    cells: tuple[Cell, ...]

    def cell(self, system: str, arm: str) -> Cell:
        """Return the cell for `system` on `arm`."""
        return next(c for c in self.cells if c.system == system and c.arm == arm)

    def to_dict(self) -> dict[str, Any]:
        """The run as JSON types."""
        return {
            "kind": "belief_benchmark",
            "data": self.data,
            "instances": self.instances,
            "skipped": self.skipped,
            "arms": list(self.arms),
            "systems": list(self.systems),
            "cells": [c.to_dict() for c in self.cells],
        }


def run_benchmark(
    dataset: Dataset,
    *,
    systems: Sequence[System] | None = None,
    arms: Sequence[str] = ARMS,
    ceilings: Mapping[str, float] = DEFAULT_CEILINGS,
) -> BenchmarkResult:
    """Run every system on every arm of every instance."""
    chosen = tuple(default_systems() if systems is None else systems)
    instances = dataset.instances
    trials = {arm: [build_trial(arm, instances, i) for i in range(len(instances))] for arm in arms}
    cells = []
    for system in chosen:
        for arm in arms:
            correct = 0
            probabilities = []
            for trial in trials[arm]:
                fact, probability = system.decide(observations_for(trial.claims, ceilings))
                if fact is None:
                    continue
                probabilities.append(probability)
                correct += normalize_value(fact) == normalize_value(trial.expected)
            cells.append(
                Cell(
                    system=system.name,
                    arm=arm,
                    trials=len(trials[arm]),
                    correct=correct,
                    asserted=len(probabilities),
                    probabilities=tuple(probabilities),
                )
            )
    return BenchmarkResult(
        data=dataset.path,
        instances=len(instances),
        skipped=dataset.skipped,
        arms=tuple(arms),
        systems=tuple(s.name for s in chosen),
        cells=tuple(cells),
    )


def format_table(result: BenchmarkResult) -> str:
    """The run as an aligned text table: accuracy and mean asserted probability per cell."""

    def show(cell: Cell) -> str:
        mean = cell.mean_probability
        return f"{cell.accuracy:6.1%} {'   -' if mean is None else f'{mean:4.2f}'}"

    name_width = max(len("system"), *(len(s) for s in result.systems))
    widths = [max(len(arm), len(show(result.cells[0]))) for arm in result.arms]
    header = "  ".join(
        ["system".ljust(name_width), *(arm.rjust(w) for arm, w in zip(result.arms, widths, strict=True))]
    )
    lines = [
        f"{result.instances} knowledge-update instances from {result.data}"
        + (f" ({result.skipped} skipped: no evidence in two sessions)" if result.skipped else ""),
        "cell: accuracy (asserted fact == expected value), then the mean probability of the "
        "asserted fact ('-' when none asserted)",
        "",
        header,
        "-" * len(header),
    ]
    for system in result.systems:
        row = [show(result.cell(system, arm)).rjust(w) for arm, w in zip(result.arms, widths, strict=True)]
        lines.append("  ".join([system.ljust(name_width), *row]))
    return "\n".join(lines)


def write_json(result: BenchmarkResult, path: Path | str) -> None:
    """Write the run as JSON to `path`."""
    Path(path).write_text(json.dumps(result.to_dict(), indent=2) + "\n", encoding="utf-8")


def run_from_path(data: Path | str | None = None) -> BenchmarkResult:
    """Load `data` (the shipped fixture when None) and run the whole benchmark."""
    return run_benchmark(load_dataset(DEFAULT_DATA if data is None else data))


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: print the table, optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="a knowledge-update JSON file (default: the shipped fixture)")
    parser.add_argument("--json", dest="json_path", help="also write the results as JSON here")
    options = parser.parse_args(argv)
    try:
        result = run_from_path(options.data)
    except BenchmarkDataError as error:
        parser.exit(2, f"error: {error}\n")
    print(format_table(result))
    if options.json_path:
        write_json(result, options.json_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
