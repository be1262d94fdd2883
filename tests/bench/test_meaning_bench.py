"""Recall by meaning's benchmark commands on small stores, with the real local model."""

from __future__ import annotations

import json
import re
import zipfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from deposits.models import DepositVector, EmbeddingPending, VectorHead
from tests.deposits.meaning.conftest import forget_everything_cached

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_seeded_deposits_get_vectors_and_the_bench_measures_every_mode(local_embedder):
    run("seed_bench", "--deposits", "120", "--owners", "2")
    if connection.vendor == "postgresql":
        # The seed checks foreign keys per COPY, which outlives its transaction inside the test's.
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
    assert EmbeddingPending.objects.count() == 120
    assert "Wrote 120 vectors" in run("seed_bench_vectors")
    assert (DepositVector.objects.count(), EmbeddingPending.objects.count(), VectorHead.objects.count()) == (
        120,
        0,
        2,
    )
    forget_everything_cached()
    out = run("bench_meaning", "--repeat", "1", "--throughput", "12", "--texts", "/nonexistent.zip")
    # Each row's CPU per recall: this process's, and its PostgreSQL backend's where it has one here.
    cpu = r"[\d.]+ \+ [\d.]+" if connection.vendor == "postgresql" else r"[\d.]+ \(this process\)"
    for name in ("words", "hybrid", "meaning", "query embedding", "hybrid, query vector cached"):
        assert re.search(rf"^\| {re.escape(name)} \| [\d.]+ \| [\d.]+ \| {cpu} \|$", out, re.MULTILINE), name
    assert "hybrid p50 / words p50 = " in out
    assert "embedding job: 12 deposits (seed sentences)" in out


def conversation(speakers: tuple[str, str], turns: list[str], qa: list[dict]) -> dict:
    session = [
        {"speaker": speakers[i % 2], "dia_id": f"D1:{i + 1}", "text": text} for i, text in enumerate(turns)
    ]
    return {"speaker_a": speakers[0], "speaker_b": speakers[1], "session_1": session, "qa": qa}


def test_locomo_scores_each_method_on_the_questions_it_can(local_embedder, tmp_path: Path):
    archive = tmp_path / "locomo.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr(
            "locomo/1.json",
            json.dumps(
                conversation(
                    ("Ann", "Ben"),
                    [
                        "I adopted a rescue dog last week",
                        "Nice! I started learning the cello",
                        "I'm vegan now",
                    ],
                    [
                        {"question": "What pet did Ann get?", "evidence": ["D1:1"], "category": 4},
                        {"question": "Which instrument does Ben play?", "evidence": ["D1:2"], "category": 4},
                        {"question": "What is her diet?", "evidence": ["D1:3"], "category": 1},
                        {"question": "Unlabelled", "evidence": [], "category": 2},
                        {"question": "Adversarial", "evidence": ["D1:1"], "category": 5},
                    ],
                )
            ),
        )
    out = run("bench_locomo", str(archive))
    assert "3 questions of categories 1-4 over 1 conversations (1 left out" in out
    assert "| recall, mode=hybrid |" in out and "| plain BM25 (rank-bm25) |" in out
    rows = {
        line.split(" | ")[0]: line
        for line in out.splitlines()
        if line.startswith("| recall") or "BM25" in line
    }
    # The diet question shares no word with "I'm vegan now": only meaning and hybrid find it.
    assert rows["| recall, mode=words"].endswith("| 66.7% |")
    assert rows["| plain BM25 (rank-bm25)"].endswith("| 66.7% |")
    assert rows["| recall, mode=meaning"].endswith("| 100.0% |")
    assert rows["| recall, mode=hybrid"].endswith("| 100.0% |")
