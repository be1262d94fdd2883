"""A realistic synthetic store for the benchmark: power-law owners, bags of 1..50, ~5% in conflict.

Rows are generated owner by owner and each owner's deposits are written oldest first, which is
the layout `CLUSTER deposits_deposit USING deposit_user_created` gives the table (README,
"Scaling out"), and loaded with COPY.
"""

from __future__ import annotations

import io
import itertools
import json
import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from deposits.domain.bags import bag_id as compute_bag_id
from deposits.domain.types import DIRECTIONAL, Scope

OWNER_PREFIX = "bench-"
MODELS = ["gpt-5", "gpt-5-mini", "claude-4", "llama-4", "mistral-l", "gemini-3", "qwen-3", "phi-5"]
DATASETS = [
    "support-tickets",
    "fraud-eval",
    "code-review",
    "search-logs",
    "billing",
    "onboarding",
    "churn",
    "sales-notes",
]
ENVS = ["prod", "staging", "dev"]
# Ordered by how often they are used (a Zipf draw): the first words match tens of thousands
# of a large owner's rows, the last only a handful — the spread the recall benchmark needs.
VOCABULARY = (  # noqa: SIM905 (a paragraph reads better than 200 quoted words)
    "model threshold latency prompt eval accuracy user retry cache timeout batch memory error rate "
    "customer fraud score ranking recall precision drift token context window budget queue worker "
    "deploy rollback canary region replica index shard schema migration embedding vector cosine "
    "tokenizer temperature sampling beam guard filter policy refusal jailbreak redteam audit "
    "privacy consent invoice refund discount coupon checkout cart basket shipping warehouse "
    "inventory forecast anomaly spike outage incident pager alert dashboard metric histogram "
    "percentile regression baseline ablation finetune adapter lora quantized distilled pruning "
    "oat milk coffee espresso morning commute bicycle train marathon yoga piano guitar novel "
    "poetry garden tomato basil sourdough ramen sushi curry tofu lentil almond walnut avocado "
    "kayak glacier volcano harbor lighthouse meadow canyon orchard vineyard tundra savanna "
    "quasar nebula pulsar comet asteroid photon neutrino boson lepton quark gluon "
    "zephyr quokka axolotl narwhal pangolin capybara okapi tapir ocelot serval caracal"
).split()


def _pseudo_words(count: int, seed: int = 3) -> list[str]:
    """Pronounceable made-up words: the long tail of names, jargon and typos real text has."""
    rng = random.Random(seed)
    onsets, vowels, codas = "bcdfghjklmnprstvwz", "aeiou", ["", "n", "r", "s", "k", "l", "x"]
    words: set[str] = set()
    while len(words) < count:
        syllables = rng.randint(2, 3)
        words.add(
            "".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas) for _ in range(syllables))
        )
    return sorted(words)


# The common words first, then a long tail: about 5,000 distinct words in all.
VOCABULARY = VOCABULARY + _pseudo_words(5000 - len(VOCABULARY))
# Cumulative, computed once: random.choices would otherwise re-add 5,000 weights per sentence.
_ZIPF_CUMULATIVE = list(itertools.accumulate(1 / (rank + 1) ** 1.1 for rank in range(len(VOCABULARY))))


def owner_sizes(deposits: int, owners: int) -> list[int]:
    """Power-law sizes (∝ 1/rank) summing to `deposits`; the largest owner holds about 10%."""
    harmonic = sum(1 / rank for rank in range(1, owners + 1))
    sizes = [max(1, round(deposits / (rank * harmonic))) for rank in range(1, owners + 1)]
    sizes[0] += deposits - sum(sizes)
    return sizes


@dataclass
class BagPlan:
    """One bag's deposits, in creation order, and which of them are superseded."""

    bag_id: str
    scope: Scope
    polarities: list[str]
    created: list[datetime]
    superseded: set[int] = field(default_factory=set)
    edges: list[tuple[int, int]] = field(default_factory=list)


def plan_owner(rng: random.Random, user_id: str, size: int, now: datetime) -> Iterator[BagPlan]:
    """Split an owner's deposits into bags; about 5% of bags (of two or more) disagree."""
    remaining, index = size, 0
    while remaining:
        bag_size = min(remaining, 1 + int(49 * rng.random() ** 3))
        remaining -= bag_size
        index += 1
        scope = Scope(
            model=rng.choice(MODELS),
            dataset=rng.choice(DATASETS),
            env=rng.choice(ENVS),
            version=f"v{index}",
            n=rng.choice([None, 100, 1000, 10000]),
            seed=None,
        )
        polarities = _polarities(rng, bag_size)
        start = now - timedelta(days=rng.uniform(0, 365))
        created = sorted(start + timedelta(minutes=rng.uniform(0, 60 * 24 * 30)) for _ in range(bag_size))
        created = [min(moment, now) for moment in created]
        plan = BagPlan(compute_bag_id(user_id, scope), scope, polarities, created)
        _maybe_correct(rng, plan)
        yield plan


def _polarities(rng: random.Random, bag_size: int) -> list[str]:
    """A bag's polarities: mostly one directional kind with some open, a few bags split."""
    main = rng.choices(DIRECTIONAL, weights=[0.5, 0.25, 0.25])[0]
    polarities = ["open" if rng.random() < 0.15 else main for _ in range(bag_size)]
    if bag_size >= 2 and rng.random() < 0.06 / 0.75:  # ~75% of bags have ≥ 2; some splits vanish
        other = rng.choice([p for p in DIRECTIONAL if p != main])
        for position in rng.sample(range(bag_size), max(1, bag_size // 4)):
            polarities[position] = other
        if main not in polarities:
            polarities[0] = main
    return polarities


def _maybe_correct(rng: random.Random, plan: BagPlan) -> None:
    """In some split bags, a correction: the newest deposit supersedes an older one.

    The one superseded has another polarity.
    """
    polarities = plan.polarities
    if len({p for p in polarities if p != "open"}) < 2 or rng.random() >= 0.4:
        return
    newest = len(polarities) - 1
    older = [i for i in range(newest) if polarities[i] not in ("open", polarities[newest])]
    if older:
        target = rng.choice(older)
        plan.superseded.add(target)
        plan.edges.append((newest, target))


def sentence(rng: random.Random) -> str:
    words = rng.choices(VOCABULARY, cum_weights=_ZIPF_CUMULATIVE, k=rng.randint(6, 14))
    return " ".join(words).capitalize()


@dataclass
class SeedCounts:
    deposits: int = 0
    bags: int = 0
    conflict_bags: int = 0
    edges: int = 0


GRADE_FOR = {"positive": "observed", "negative": "observed", "cautionary": "anecdotal", "open": "anecdotal"}


def generate(
    *,
    deposits: int,
    owners: int,
    now: datetime,
    seed: int,
    belief_share: float,
    on_owner: Callable[[str, list[tuple], list[tuple], list[tuple]], None],
) -> SeedCounts:
    """Generate every owner and hand each one's (deposit rows, bag rows, edge rows) to `on_owner`."""
    rng = random.Random(seed)
    counts = SeedCounts()
    for rank, size in enumerate(owner_sizes(deposits, owners), start=1):
        user_id = f"{OWNER_PREFIX}{rank:05d}"
        deposit_rows: list[tuple] = []
        bag_rows: list[tuple] = []
        edge_rows: list[tuple] = []
        for plan in plan_owner(rng, user_id, size, now):
            ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in plan.polarities]
            deposit_rows += [
                _deposit_row(
                    rng, plan, i, deposit_id=ids[i], user_id=user_id, rank=rank, belief_share=belief_share
                )
                for i in range(len(ids))
            ]
            bag_rows.append(_bag_row(plan, user_id))
            for new, old in plan.edges:
                edge_rows.append((user_id, ids[new], ids[old], "corrected", plan.created[new]))
            counts.bags += 1
            counts.conflict_bags += _in_conflict(plan)
            counts.edges += len(plan.edges)
        counts.deposits += len(deposit_rows)
        deposit_rows.sort(key=lambda row: row[-1])  # by created_at: the clustered layout
        on_owner(user_id, deposit_rows, bag_rows, edge_rows)
    return counts


def _deposit_row(
    rng: random.Random,
    plan: BagPlan,
    i: int,
    *,
    deposit_id: uuid.UUID,
    user_id: str,
    rank: int,
    belief_share: float,
) -> tuple:
    """The plan's i-th deposit as a deposits_deposit row, some with a belief claim."""
    polarity, scope = plan.polarities[i], plan.scope
    belief_key = belief_value = None
    if rng.random() < belief_share:
        belief_key = f"pref_{rng.randrange(50)}"
        belief_value = f"option {rng.randrange(4)}"
    return (
        deposit_id, user_id, plan.bag_id, sentence(rng), polarity, GRADE_FOR[polarity],
        scope.model, scope.dataset, scope.env, scope.version, scope.n, scope.seed, None,
        "[]", json.dumps([f"run://{rank}/{i}"]) if polarity != "open" else "[]",
        "bench", None, None, "bench-loader", "unreplicated", belief_key, belief_value, plan.created[i],
    )  # fmt: skip


def _in_conflict(plan: BagPlan) -> bool:
    """Whether the bag's live deposits hold two directional kinds."""
    live = {p for i, p in enumerate(plan.polarities) if p in DIRECTIONAL and i not in plan.superseded}
    return len(live) >= 2


def _bag_row(plan: BagPlan, user_id: str) -> tuple:
    """The plan's deposits_scopebag row: its live and kept counts and newest deposit per polarity."""
    live = {p: 0 for p in (*DIRECTIONAL, "open")}
    kept = {p: 0 for p in DIRECTIONAL}
    newest: dict[str, datetime | None] = {p: None for p in DIRECTIONAL}
    for i, (polarity, created) in enumerate(zip(plan.polarities, plan.created, strict=True)):
        if polarity in kept:
            kept[polarity] += 1
        if i in plan.superseded:
            continue
        live[polarity] += 1
        if polarity in newest:
            newest[polarity] = created
    return (
        plan.bag_id, user_id, *plan.scope.facets,
        live["positive"], live["negative"], live["cautionary"], live["open"],
        newest["positive"], newest["negative"], newest["cautionary"],
        kept["positive"], kept["negative"], kept["cautionary"], len(plan.superseded),
        plan.created[-1], plan.created[0], plan.created[-1],
    )  # fmt: skip


def copy_text(rows: list[tuple]) -> str:
    """Rows in PostgreSQL COPY text format."""
    out = io.StringIO()
    for row in rows:
        out.write("\t".join(_copy_value(v) for v in row))
        out.write("\n")
    return out.getvalue()


def _copy_value(value: object) -> str:
    if value is None:
        return "\\N"
    if isinstance(value, datetime):
        return value.isoformat()
    text = str(value)
    if "\\" in text or "\t" in text or "\n" in text:
        text = text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
    return text
