"""`bench_locomo [path]`: retrieval quality of recall by words, meaning and hybrid on LoCoMo, beside BM25."""

from __future__ import annotations

import time
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
        found = {method: dict.fromkeys(LOCOMO_DEPTHS, 0) for method in METHODS}
        by_category: dict[int, dict[str, int]] = {}
        asked = unlabelled = 0
        started = time.perf_counter()
        for conversation in conversations:
            dia_of = stored_turns(conversation) if options["reuse"] else {}
            if len(dia_of) != len(conversation.turns):
                with transaction.atomic():
                    delete_owners(conversation.owner)
                dia_of = store_conversation(conversation)
            counts = deposits_embed(user_id=conversation.owner)
            self.stdout.write(
                f"  {conversation.owner}: {len(conversation.turns)} turns stored and embedded "
                f"({counts['per_second']}/s), {len(conversation.questions)} questions"
            )
            bm25 = bm25_ranking(conversation)
            unlabelled += conversation.unlabelled
            for question, category, evidence in conversation.questions:
                asked += 1
                rankings = {
                    mode: [
                        dia_of[hit.id]
                        for hit in recall(user_id=conversation.owner, query=question, limit=10, mode=mode)
                    ]
                    for mode in ("words", "meaning", "hybrid")
                }
                rankings["bm25"] = bm25(question, 10)
                tally = by_category.setdefault(category, {"asked": 0, **dict.fromkeys(METHODS, 0)})
                tally["asked"] += 1
                for method, ranking in rankings.items():
                    for depth in LOCOMO_DEPTHS:
                        found[method][depth] += all_found(evidence, ranking, depth)
                    tally[method] += all_found(evidence, ranking, 5)
        self.stdout.write(
            f"\n{asked} questions of categories 1-4 over {len(conversations)} conversations "
            f"({unlabelled} left out: their evidence names no turn), in {time.perf_counter() - started:.0f}s.\n"
            "Share whose evidence turns are all in the first N hits:\n"
        )
        self.stdout.write("| method | top 1 | top 5 | top 10 |\n|---|---|---|---|")
        for method in METHODS:
            label = "plain BM25 (rank-bm25)" if method == "bm25" else f"recall, mode={method}"
            shares = " | ".join(f"{found[method][depth] / max(asked, 1):.1%}" for depth in LOCOMO_DEPTHS)
            self.stdout.write(f"| {label} | {shares} |")
        self.stdout.write("\nTop 5 by category:\n\n| category | questions | " + " | ".join(METHODS) + " |")
        self.stdout.write("|---" * (len(METHODS) + 2) + "|")
        for category in sorted(by_category):
            tally = by_category[category]
            shares = " | ".join(f"{tally[m] / tally['asked']:.1%}" for m in METHODS)
            self.stdout.write(f"| {category} | {tally['asked']} | {shares} |")
