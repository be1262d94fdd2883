"""`bench_locomo [path]`: retrieval quality of recall by words, meaning and hybrid on LoCoMo, beside BM25."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from atlaso_site.bench.meaning import (
    LOCOMO_DEPTHS,
    LOCOMO_PREFIX,
    all_found,
    bm25_ranking,
    load_locomo,
    store_conversation,
    stored_turns,
)
from atlaso_site.bench.store import delete_owners
from deposits.embedders import configured
from deposits.selectors.recall import recall
from deposits.services.embedding import deposits_embed

METHODS = ("words", "meaning", "hybrid", "bm25")


class Command(BaseCommand):
    help = (
        "Store every dialogue turn of the LoCoMo conversations as deposits (one owner each), ask every "
        "question of categories 1-4, and print the share whose evidence turns are all in the first 1, 5 "
        "and 10 hits: recall by words, meaning and hybrid, and plain BM25 over the same turns."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "path",
            nargs="?",
            default=str(Path(settings.BASE_DIR).parent / "shared" / "data" / "locomo-dev.zip"),
            help="the LoCoMo archive (read where it lies, never copied; default ../shared/data/locomo-dev.zip)",
        )
        parser.add_argument(
            "--reuse",
            action="store_true",
            help="keep the conversations an earlier run stored and embedded (ask the questions again)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["path"])
        if not path.is_file():
            raise CommandError(f"no LoCoMo archive at {path}")
        if configured().embedder is None:
            raise CommandError("recall by meaning needs an embedder: set ATLASO_EMBEDDER (local or openai)")
        conversations = load_locomo(path)
        if not options["reuse"]:
            with transaction.atomic():
                delete_owners(LOCOMO_PREFIX)
        score = Score()
        started = time.perf_counter()
        for conversation in conversations:
            dia_of = self._stored(conversation, reuse=options["reuse"])
            bm25 = bm25_ranking(conversation)
            score.unlabelled += conversation.unlabelled
            for question, category, evidence in conversation.questions:
                rankings = {
                    mode: [
                        dia_of[hit.id]
                        for hit in recall(user_id=conversation.owner, query=question, limit=10, mode=mode)
                    ]
                    for mode in ("words", "meaning", "hybrid")
                }
                rankings["bm25"] = bm25(question, 10)
                score.add(category, evidence, rankings)
        self.stdout.write(
            f"\n{score.asked} questions of categories 1-4 over {len(conversations)} conversations "
            f"({score.unlabelled} left out: their evidence names no turn), in "
            f"{time.perf_counter() - started:.0f}s.\nShare whose evidence turns are all in the first N hits:\n"
        )
        self.stdout.write(score.table())

    def _stored(self, conversation: Any, *, reuse: bool) -> dict[str, str]:
        """The conversation's turns stored and embedded (again unless `reuse` finds them): id → dia_id."""
        dia_of = stored_turns(conversation) if reuse else {}
        if len(dia_of) != len(conversation.turns):
            with transaction.atomic():
                delete_owners(conversation.owner)
            dia_of = store_conversation(conversation)
        counts = deposits_embed(user_id=conversation.owner)
        self.stdout.write(
            f"  {conversation.owner}: {len(conversation.turns)} turns stored and embedded "
            f"({counts['per_second']}/s), {len(conversation.questions)} questions"
        )
        return dia_of


@dataclass
class Score:
    """Questions whose evidence each method placed whole in its first 1, 5 and 10 hits."""

    asked: int = 0
    unlabelled: int = 0
    found: dict[str, dict[int, int]] = field(
        default_factory=lambda: {method: dict.fromkeys(LOCOMO_DEPTHS, 0) for method in METHODS}
    )
    by_category: dict[int, dict[str, int]] = field(default_factory=dict)

    def add(self, category: int, evidence: frozenset[str], rankings: dict[str, list[str]]) -> None:
        self.asked += 1
        tally = self.by_category.setdefault(category, {"asked": 0, **dict.fromkeys(METHODS, 0)})
        tally["asked"] += 1
        for method, ranking in rankings.items():
            for depth in LOCOMO_DEPTHS:
                self.found[method][depth] += all_found(evidence, ranking, depth)
            tally[method] += all_found(evidence, ranking, 5)

    def table(self) -> str:
        lines = ["| method | top 1 | top 5 | top 10 |", "|---|---|---|---|"]
        for method in METHODS:
            label = "plain BM25 (rank-bm25)" if method == "bm25" else f"recall, mode={method}"
            shares = " | ".join(
                f"{self.found[method][depth] / max(self.asked, 1):.1%}" for depth in LOCOMO_DEPTHS
            )
            lines.append(f"| {label} | {shares} |")
        lines += ["", "Top 5 by category:", "", "| category | questions | " + " | ".join(METHODS) + " |"]
        lines.append("|---" * (len(METHODS) + 2) + "|")
        for category in sorted(self.by_category):
            tally = self.by_category[category]
            shares = " | ".join(f"{tally[m] / tally['asked']:.1%}" for m in METHODS)
            lines.append(f"| {category} | {tally['asked']} | {shares} |")
        return "\n".join(lines)
