"""Recall by meaning's benchmarks: seeded vectors, words against hybrid, throughput, LoCoMo.

Vectors for the seeded store, words against hybrid recall, the embedding job's throughput, and
retrieval quality on LoCoMo (docs/BENCHMARKS.md, "Recall by meaning").

The seeded store's sentences are random words from the seed's vocabulary, and embedding a million
of them with the local model takes this machine about ten hours (25–30 short texts a second on
one core), so `seed_vectors` gives each seeded deposit the model's own vectors of its words,
summed and normalised: vectors in the model's space, with the model's centre and floor, written
as the job writes them. Recall's cost does not depend on what the vectors say: it reads the same
codes, ranks the same number of candidates exactly, and embeds the query with the real model.
"""

from __future__ import annotations

import json
import re
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from django.db import connection
from django.utils import timezone

from atlaso_site.bench.seed import OWNER_PREFIX
from deposits.domain.meaning import binary_code, quantized, unit
from deposits.embedders import configured
from deposits.models import DepositVector, EmbeddingModel
from deposits.search.meaning import ModelInfo
from deposits.services.embedding import model_calibrate

WORD = re.compile(r"[a-z]+")
OWNERS_PER_COPY = 200


def _owners() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT user_id FROM deposits_ownertally WHERE user_id LIKE %s ORDER BY user_id",
            [OWNER_PREFIX + "%"],
        )
        return [row[0] for row in cursor.fetchall()]


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class WordVectors:
    """The model's passage vector of each word met, embedded the first time it is met."""

    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder
        self.index: dict[str, int] = {}
        self.vectors = np.zeros((0, 0), dtype=np.float32)

    def of(self, texts: list[str]) -> list[list[int]]:
        """Each text's words as rows of `vectors`, embedding the words not met before."""
        words = [WORD.findall(text.lower()) for text in texts]
        new = sorted({w for text in words for w in text} - self.index.keys())
        for start in range(0, len(new), 256):
            batch = new[start : start + 256]
            vectors = self._embedder.passages(batch, threads=2)
            self.vectors = vectors if not self.index else np.vstack([self.vectors, vectors])
            for word in batch:
                self.index[word] = len(self.index)
        return [[self.index[w] for w in text] for text in words]


def seed_vectors(*, say: Callable[[str], None]) -> int:
    """Give every seeded deposit lacking one a vector of the configured model; how many."""
    embedder = configured().embedder
    if embedder is None:
        raise RuntimeError("no embedder is configured (ATLASO_EMBEDDER)")
    model = model_calibrate(embedder)
    started = time.perf_counter()
    words = WordVectors(embedder)
    written = 0
    for owners in _chunks(_owners(), OWNERS_PER_COPY):
        written += _seed_owners(owners, model, words)
        say(
            f"  {written:>10,} vectors written ({written / (time.perf_counter() - started):,.0f}/s, "
            f"{len(words.index):,} words embedded)"
        )
    # What the job would otherwise queue again: nothing of these waits, and the model is filled.
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM deposits_embeddingpending WHERE user_id LIKE %s AND EXISTS (SELECT 1 FROM "
            "deposits_depositvector v WHERE v.deposit_id = deposits_embeddingpending.deposit_id AND v.model = %s)",
            [OWNER_PREFIX + "%", model.name],
        )
        cursor.execute(
            "INSERT INTO deposits_vectorhead (user_id, model, last_id) "
            "SELECT user_id, model, max(id) FROM deposits_depositvector WHERE model = %s "
            "GROUP BY user_id, model ON CONFLICT (user_id, model) DO UPDATE SET last_id = excluded.last_id",
            [model.name],
        )
    EmbeddingModel.objects.filter(name=model.name, backlog_filled_at__isnull=True).update(
        backlog_filled_at=timezone.now()
    )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE deposits_depositvector; ANALYZE deposits_embeddingpending")
    return written


def _seed_owners(owners: list[str], model: ModelInfo, words: WordVectors) -> int:
    marks = ", ".join(["%s"] * len(owners))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT d.id, d.user_id, d.content FROM deposits_deposit d WHERE d.user_id IN ({marks}) "
            "AND NOT EXISTS (SELECT 1 FROM deposits_depositvector v WHERE v.deposit_id = d.id AND v.model = %s) "
            "ORDER BY d.user_id, d.created_at",
            [*owners, model.name],
        )
        rows = cursor.fetchall()
    if not rows:
        return 0
    now = timezone.now()
    vectors = [
        unit(words.vectors[indexes].sum(axis=0)) if indexes else words.vectors[0]
        for indexes in words.of([row[2] for row in rows])
    ]
    DepositVector.objects.bulk_create(
        [
            DepositVector(
                deposit_id=uuid.UUID(str(deposit_id)),
                user_id=user_id,
                model=model.name,
                code=binary_code(vector, model.centre),
                vector=quantized(vector),
                created_at=now,
            )
            for (deposit_id, user_id, _), vector in zip(rows, vectors, strict=True)
        ],
        batch_size=5000,
    )
    return len(rows)


# ---- LoCoMo: retrieval quality ----------------------------------------------------------------

LOCOMO_PREFIX = "locomo-"
LOCOMO_CATEGORIES = (1, 2, 3, 4)
LOCOMO_DEPTHS = (1, 5, 10)
TOKEN = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Conversation:
    owner: str
    turns: list[tuple[str, str, str]]  # (dia_id, session, text)
    questions: list[tuple[str, int, frozenset[str]]]  # (question, category, evidence dia_ids)
    unlabelled: int  # questions of categories 1-4 whose evidence names no turn


def turn_text(turn: dict[str, Any]) -> str:
    """A dialogue turn as a deposit holds it: who said what, and the photo they shared, if any."""
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    return f"{text} [shares {caption}]" if caption else text


def load_locomo(path: Path) -> list[Conversation]:
    """The conversations of the LoCoMo archive (one JSON file each), read where it lies."""
    conversations = []
    with zipfile.ZipFile(path) as archive:
        for name in sorted(n for n in archive.namelist() if n.endswith(".json")):
            data = json.loads(archive.read(name))
            turns = [
                (turn["dia_id"], key, turn_text(turn))
                for key, session in data.items()
                if re.fullmatch(r"session_\d+", key) and isinstance(session, list)
                for turn in session
            ]
            known = {dia_id for dia_id, _, _ in turns}
            questions, unlabelled = [], 0
            for qa in data["qa"]:
                if qa.get("category") not in LOCOMO_CATEGORIES:
                    continue
                # "D8:6; D9:17" names two turns; a label naming no turn cannot be scored.
                evidence = frozenset(
                    part for label in qa["evidence"] for part in re.split(r"[;\s]+", label) if part
                )
                if not evidence or not evidence <= known:
                    unlabelled += 1
                    continue
                questions.append((str(qa["question"]), int(qa["category"]), evidence))
            owner = LOCOMO_PREFIX + Path(name).stem
            conversations.append(Conversation(owner, turns, questions, unlabelled))
    return conversations


def store_conversation(conversation: Conversation) -> dict[str, str]:
    """Store every turn as an open deposit of the conversation's owner; deposit id → dia_id.

    One bag per session, written through the bulk service as an agent's writes are.
    """
    from deposits.domain.validation import validate_bulk
    from deposits.services.deposits import deposit_add_many

    by_deposit: dict[str, str] = {}
    items = [
        {
            "content": text,
            "scope": {"dataset": "locomo", "version": session},
            "tags": [dia_id],
            "idempotency_key": f"{conversation.owner}-{dia_id}-{i}",
        }
        for i, (dia_id, session, text) in enumerate(conversation.turns)
    ]
    for start in range(0, len(items), 1000):
        result = deposit_add_many(
            bulk=validate_bulk(conversation.owner, items[start : start + 1000]), channel=None
        )
        assert not result.failed, result.failed
        for record in (*result.committed, *result.duplicates):
            by_deposit[record.id] = record.tags[0]
    return by_deposit


def stored_turns(conversation: Conversation) -> dict[str, str]:
    """What an earlier run stored of the conversation: deposit id → dia_id."""
    from deposits.models import Deposit

    return {
        str(deposit_id): tags[0]
        for deposit_id, tags in Deposit.objects.filter(user_id=conversation.owner).values_list("id", "tags")
        if tags
    }


def bm25_ranking(conversation: Conversation) -> Callable[[str, int], list[str]]:
    """Plain BM25 (rank-bm25's Okapi, its defaults) over the same turns, lower-cased words."""
    from rank_bm25 import BM25Okapi

    ids = [dia_id for dia_id, _, _ in conversation.turns]
    index = BM25Okapi([TOKEN.findall(text.lower()) for _, _, text in conversation.turns])

    def top(question: str, depth: int) -> list[str]:
        scores = index.get_scores(TOKEN.findall(question.lower()))
        order = sorted(range(len(ids)), key=lambda i: (-scores[i], i))
        return [ids[i] for i in order[:depth] if scores[i] > 0]

    return top


def all_found(evidence: frozenset[str], ranking: list[str], depth: int) -> bool:
    return evidence <= set(ranking[:depth])


# ---- latency and throughput -------------------------------------------------------------------


def throughput_texts(path: Path | None, count: int) -> list[str]:
    """Real text to embed: LoCoMo's turns when the archive is there, else the seed's sentences."""
    if path is not None and path.is_file():
        texts = [text for conversation in load_locomo(path) for _, _, text in conversation.turns]
        return (texts * (count // max(len(texts), 1) + 1))[:count]
    import random

    from atlaso_site.bench.seed import sentence

    rng = random.Random(11)
    return [sentence(rng) for _ in range(count)]
