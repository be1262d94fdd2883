"""The deposit a resolution writes, built without a database: what it copies, and the bounds it keeps."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from atlaso_site.lib.errors import AtlasoError
from deposits.domain.review import resolution_correction
from deposits.domain.validation import MAX_CONTENT, MAX_CONTRADICTS, MAX_LIST

FACETS = {"model": "gpt-5", "dataset": "evals", "env": "prod", "version": None, "n": None, "seed": None}


@dataclass
class Kept:
    content: str
    polarity: str = "positive"
    evidence_grade: str = "anecdotal"
    artifact_refs: tuple[str, ...] = ()


def correction(kept, *, overruled=("d-1",), stated=None, facets=FACETS):
    return resolution_correction(
        user_id="alice",
        facets=facets,
        kept=kept,
        overruled=list(overruled),
        stated=stated,
        reason="re-measured",
        reviewer="rita",
    )


def test_it_copies_the_kept_deposits_polarity_best_grade_and_artifacts_into_the_bags_scope():
    kept = [
        Kept("threshold 0.7 holds", evidence_grade="observed", artifact_refs=("s3://a",)),
        Kept("threshold 0.7 holds again", evidence_grade="verified", artifact_refs=("s3://a", "s3://b")),
    ]
    written = correction(kept, overruled=["d-1", "d-2"])
    draft = written.draft
    assert draft.content == "threshold 0.7 holds\nthreshold 0.7 holds again"
    assert (draft.polarity, draft.evidence_grade) == ("positive", "verified")
    assert draft.artifact_refs == ("s3://a", "s3://b")
    assert draft.contradicts == ("d-1", "d-2")
    assert (draft.author, draft.author_role) == ("rita", "reviewer")
    assert draft.scope.facets_dict() == FACETS
    assert (written.reason, written.inherits_scope) == ("re-measured", False)


def test_the_reviewers_words_are_what_holds_when_given():
    assert correction([Kept("a claim")], stated="what holds").draft.content == "what holds"


def test_kept_contents_past_one_claims_length_are_refused_on_holds():
    with pytest.raises(AtlasoError) as refused:
        correction([Kept("x" * MAX_CONTENT), Kept("y" * 10)])
    assert refused.value.details["field"] == "holds"


def test_a_resolution_holds_no_more_artifacts_than_one_deposit_may():
    kept = [
        Kept(f"claim {i}", artifact_refs=(f"s3://{i}-a", f"s3://{i}-b")) for i in range(MAX_LIST // 2 + 1)
    ]
    with pytest.raises(AtlasoError) as refused:
        correction(kept)
    assert refused.value.details["field"] == "artifact_refs"


def test_a_resolution_supersedes_no_more_deposits_than_one_correction_may():
    with pytest.raises(AtlasoError) as refused:
        correction([Kept("a claim")], overruled=[f"d-{i}" for i in range(MAX_CONTRADICTS + 1)])
    assert refused.value.details["field"] == "contradicts"


def test_a_bag_facet_longer_than_a_deposits_is_refused_as_a_clients_would_be():
    with pytest.raises(AtlasoError) as refused:
        correction([Kept("a claim")], facets={**FACETS, "model": "m" * 300})
    assert refused.value.details["field"] == "scope.model"
