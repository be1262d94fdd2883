"""Recall by meaning with the real local model.

A paraphrase is found by meaning and not by words, an unrelated query finds nothing above the
floor, flags cover the bags found by meaning, a model change re-embeds, erasure takes the
vector, and no key reaches another tenant's vectors.
"""

from __future__ import annotations

import pytest

from atlaso_site.lib.errors import AtlasoError
from deposits.models import DepositVector, EmbeddingPending
from deposits.selectors.recall import recall
from deposits.services.embedding import deposits_embed
from tests.conftest import make_client
from tests.deposits.meaning.conftest import forget_everything_cached
from tests.deposits.scenario import NARROW, correct, put, retract

pytestmark = pytest.mark.django_db

# Shares no word with any claim below (SQLite's index keeps stop words too).
FOOD = "what food does she like?"


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
    assert list(recall(user_id="alice", query=FOOD, mode="words")) == []
    by_meaning = recall(user_id="alice", query=FOOD, mode="meaning")
    assert [hit.id for hit in by_meaning] == [diet["vegan"]]
    assert by_meaning.items[0].matched_by == "meaning"
    assert by_meaning.explain() == "1 hit across 1 bag · 0 bags in conflict · not confident · by meaning"
    hybrid = recall(user_id="alice", query=FOOD, mode="hybrid")
    assert [hit.id for hit in hybrid] == [diet["vegan"]]
    assert hybrid.explain().endswith("· by words and meaning")


def test_an_unrelated_query_finds_nothing_by_meaning(diet):
    assert list(recall(user_id="alice", query="lattice gauge theory of quarks", mode="meaning")) == []


def test_a_hit_both_rankings_find_says_both_and_ranks_first(diet):
    results = recall(user_id="alice", query="vegan food", mode="hybrid")
    assert results.items[0].id == diet["vegan"]
    assert results.items[0].matched_by == "both"


def test_the_default_is_hybrid_once_the_owner_has_vectors_and_words_before(local_embedder):
    put("open", "I'm vegan", {})
    before = recall(user_id="alice", query=FOOD)
    assert (list(before), before.explain()) == (
        [],
        "0 hits across 0 bags · 0 bags in conflict · not confident",
    )
    deposits_embed()
    after = recall(user_id="alice", query=FOOD)
    assert [hit.content for hit in after] == ["I'm vegan"]
    assert after.explain().endswith("· by words and meaning")


def test_meaning_asked_of_a_server_without_an_embedder_is_refused(db, api, settings):
    settings.ATLASO_EMBEDDER = "none"
    for mode in ("meaning", "hybrid"):
        answer = api.get(f"/users/alice/recall?q=food&mode={mode}")
        assert (answer.status, answer.body["error"]["code"]) == (422, "embedder_unavailable")
        assert answer.body["error"]["field"] == "mode"
    assert api.get("/users/alice/recall?q=food&mode=words").status == 200
    assert api.get("/users/alice/recall?q=food").status == 200


def test_an_unknown_mode_is_a_validation_error(db, api):
    answer = api.get("/users/alice/recall?q=food&mode=vibes")
    assert (answer.status, answer.body["error"]["code"]) == (422, "validation_error")
    with pytest.raises(AtlasoError):
        recall(user_id="alice", query="food", mode="vibes")


def test_a_conflict_bag_found_by_meaning_alone_sets_the_flags(local_embedder):
    put("positive", "Strict vegan diet")
    put("negative", "Grilled steak most weekends")
    put("positive", "Cycles to work", {"model": "commute"})
    put("positive", "Cycles to work every day", {"model": "commute"})
    deposits_embed()
    question = FOOD
    by_words = recall(user_id="alice", query=question, mode="words")
    assert (list(by_words), by_words.has_disagreement) == ([], False)
    for mode in ("meaning", "hybrid"):
        results = recall(user_id="alice", query=question, mode=mode, limit=1)
        assert results.has_disagreement and not results.is_confident
        assert results.conflict_bag_count == 1
        assert results.items[0].has_disagreement
        assert {hit.matched_by for hit in results} == {"meaning"}


def test_hybrid_counts_a_bag_both_rankings_find_once(local_embedder):
    put("positive", "Strict vegan diet")
    put("negative", "Grilled steak most weekends, not vegan")
    deposits_embed()
    results = recall(user_id="alice", query="is she vegan", mode="hybrid")
    assert (results.bag_count, results.conflict_bag_count) == (1, 1)
    assert {hit.matched_by for hit in results} == {"both"}


def test_meaning_keeps_to_the_scope_asked_and_to_live_deposits(local_embedder):
    old = put("positive", "Strict vegan diet", NARROW)
    correct([old], "Eats fish again: pescatarian", polarity="negative")
    put("positive", "Strict vegan diet, they say", {"model": "other"})
    deposits_embed()
    live = recall(user_id="alice", query=FOOD, mode="meaning", facets={"model": "gpt-5"})
    assert [hit.content for hit in live] == ["Eats fish again: pescatarian"]
    everything = recall(
        user_id="alice",
        query=FOOD,
        mode="meaning",
        facets={"model": "gpt-5"},
        include_superseded=True,
    )
    assert {hit.content: hit.superseded for hit in everything} == {
        "Eats fish again: pescatarian": False,
        "Strict vegan diet": True,
    }


def test_a_model_change_re_embeds_and_meaning_uses_only_the_new_models_vectors(diet, monkeypatch):
    from deposits import embedders

    assert DepositVector.objects.filter(model=embedders.local_name()).count() == 3
    monkeypatch.setattr(embedders, "local_name", lambda: "local:another-model")
    embedders._configured.clear()
    forget_everything_cached()
    # Until the job ran with the new model, meaning has no vectors of it: words, saying so.
    waiting = recall(user_id="alice", query=FOOD, mode="meaning")
    assert waiting.explain().endswith(
        "by words only: no deposit of alice has a vector of local:another-model yet"
    )
    counts = deposits_embed()
    assert (counts["queued"], counts["embedded"], counts["dropped"]) == (3, 3, 3)
    assert set(DepositVector.objects.values_list("model", flat=True)) == {"local:another-model"}
    assert [hit.id for hit in recall(user_id="alice", query=FOOD, mode="meaning")] == [diet["vegan"]]
    embedders._configured.clear()


def test_an_erased_deposits_vector_is_gone_and_meaning_no_longer_finds_it(diet, eraser):
    assert DepositVector.objects.filter(deposit_id=diet["vegan"]).exists()
    answer = eraser.delete(f"/users/alice/deposits/{diet['vegan']}?mode=hard&reason=gdpr")
    assert answer.status == 200
    assert not DepositVector.objects.filter(deposit_id=diet["vegan"]).exists()
    assert list(recall(user_id="alice", query=FOOD, mode="meaning")) == []


def test_a_written_deposit_waits_in_the_backlog_until_the_job_and_a_retracted_one_needs_no_vector(
    local_embedder,
):
    kept = put("open", "I'm vegan", {})
    dropped = put("open", "I hate mornings", {})
    assert {str(i) for i in EmbeddingPending.objects.values_list("deposit_id", flat=True)} == {kept, dropped}
    retract(dropped)
    counts = deposits_embed()
    assert (counts["embedded"], counts["skipped"], counts["waiting"]) == (1, 1, 0)
    assert [str(d) for d in DepositVector.objects.values_list("deposit_id", flat=True)] == [kept]


@pytest.mark.parametrize("mode", ["words", "meaning", "hybrid"])
def test_a_confined_key_reaches_no_other_tenants_vectors_by_any_mode(local_embedder, mode):
    put("open", "I'm vegan", {}, user="tenant-b:x")
    put("open", "I cycle to work", {}, user="tenant-a:x")
    deposits_embed()
    reader = make_client(channel="tenant-a-reader", perms=("read",), prefix="tenant-a:")
    refused = reader.get(f"/users/tenant-b:x/recall?q=what+food+does+she+like&mode={mode}")
    assert (refused.status, refused.body["error"]["code"]) == (403, "forbidden")
    assert "vegan" not in str(refused.body)
    own = reader.get(f"/users/tenant-a:x/recall?q=what+food+does+she+like&mode={mode}")
    assert own.status == 200
    assert "vegan" not in str(own.body)


def test_hybrid_counts_the_bags_found_by_words_and_those_found_by_meaning_alone(local_embedder):
    put("positive", "Strict vegan diet")
    put("positive", "Rides a bicycle to the office every morning", {"model": "commute"})
    put("positive", "Plays the cello on Sundays", {"model": "music"})
    deposits_embed()
    words = recall(user_id="alice", query="vegan cycling", mode="words")
    hybrid = recall(user_id="alice", query="vegan cycling", mode="hybrid")
    meaning_only = {hit.bag_id for hit in hybrid if hit.matched_by == "meaning"}
    assert meaning_only and words.bag_count >= 1
    assert hybrid.bag_count == words.bag_count + len(meaning_only)


@pytest.mark.parametrize("embedded_first", [True, False])
def test_hybrid_answers_the_same_whether_the_words_or_the_query_vector_come_first(
    diet, monkeypatch, embedded_first
):
    from deposits.embedders import QueryVector, forget_query_vectors

    asked = {"query": "vegan cyclist", "mode": "hybrid", "limit": 2}
    forget_query_vectors()
    expected = recall(user_id="alice", **asked)
    # While the vector is still being computed, recall reads the words' hits beforehand.
    monkeypatch.setattr(QueryVector, "done", lambda self: embedded_first)
    forget_query_vectors()
    results = recall(user_id="alice", **asked)
    assert [(hit.id, hit.matched_by, hit.score) for hit in results] == [
        (hit.id, hit.matched_by, hit.score) for hit in expected
    ]
    assert results == expected


def test_an_owner_without_vectors_is_recalled_by_words_and_no_query_is_embedded(local_embedder, monkeypatch):
    import deposits.selectors.recall as recall_module

    embedded = []

    class Counted(recall_module.QueryVector):
        def __init__(self, embedder, text):
            embedded.append(text)
            super().__init__(embedder, text)

    monkeypatch.setattr(recall_module, "QueryVector", Counted)
    put("open", "I'm vegan", {})
    assert [hit.matched_by for hit in recall(user_id="alice", query="vegan")] == ["words"]
    assert embedded == []
    deposits_embed()
    for _ in range(2):  # codes read first, then held: either way the query is embedded once
        assert [hit.matched_by for hit in recall(user_id="alice", query="vegan")] == ["both"]
    assert embedded == ["vegan", "vegan"]
