"""Recall by meaning with the real local model: a paraphrase is found by meaning, not by words."""

from __future__ import annotations

import pytest

from deposits.selectors.recall import recall
from deposits.services.embedding import deposits_embed
from tests.deposits.scenario import put

pytestmark = pytest.mark.django_db


@pytest.fixture
def diet(local_embedder) -> dict[str, str]:
    ids = {
        "vegan": put("open", "I'm vegan", {}),
        "bike": put("open", "I cycle to work every morning", {}),
        "deploy": put("open", "Our canary deployment failed on Friday", {}),
    }
    deposits_embed()
    return ids


def test_a_paraphrase_sharing_no_word_is_found_by_meaning_and_hybrid_not_by_words(diet):
    question = "what food does she like?"
    assert list(recall(user_id="alice", query=question, mode="words")) == []
    by_meaning = recall(user_id="alice", query=question, mode="meaning")
    assert [hit.id for hit in by_meaning][:1] == [diet["vegan"]]
    assert by_meaning.items[0].matched_by == "meaning"
    hybrid = recall(user_id="alice", query=question, mode="hybrid")
    assert [hit.id for hit in hybrid][:1] == [diet["vegan"]]
    assert hybrid.explain().endswith("· by words and meaning")


def test_an_unrelated_query_finds_nothing_by_meaning(diet):
    results = recall(user_id="alice", query="lattice gauge theory of quarks", mode="meaning")
    assert list(results) == []
