"""The write gate: every row of the table, both sides of each boundary, and the red-team bump."""

from __future__ import annotations

import pytest

from deposits.domain.gate import judge, judged_grade
from deposits.domain.types import Scope
from deposits.domain.validation import DepositDraft, validate_deposit

BROAD = Scope(model="gpt-5")
# Narrow without provenance: two facets, neither env nor version, and no artifact_refs.
NARROW = Scope(model="gpt-5", dataset="evals-v2")

POSITIVE_BROAD = (
    "positive/broad claim requires evidence_grade>=replicated; upgrade evidence or narrow scope "
    "(e.g. add model= or dataset=)"
)
POSITIVE_NARROW = "positive/narrow claim requires evidence_grade>=observed; upgrade evidence"
NEGATIVE_BROAD = (
    "negative/broad claim requires evidence_grade>=observed; upgrade evidence or narrow scope "
    "(e.g. add model= or dataset=) and give provenance"
)


def provenance_reason(polarity: str, width: str) -> str:
    return (
        f"{polarity}/{width} claim requires provenance (artifact_refs, env= or version=); "
        "add an artifact_ref or set scope env= or version="
    )


def draft(
    polarity: str,
    grade: str = "anecdotal",
    scope: Scope = BROAD,
    *,
    artifact_refs: tuple[str, ...] = (),
    author_role: str | None = None,
) -> DepositDraft:
    return DepositDraft(
        user_id="alice",
        content="a claim",
        polarity=polarity,
        evidence_grade=grade,
        scope=scope,
        artifact_refs=artifact_refs,
        author_role=author_role,
    )


@pytest.mark.parametrize("scope", [Scope(), BROAD, NARROW], ids=["no-scope", "broad", "narrow"])
def test_it_accepts_an_open_note_at_any_breadth_and_grade(scope):
    assert judge(draft("open", "anecdotal", scope)).accepted


@pytest.mark.parametrize(
    ("polarity", "scope", "rejected_grade", "accepted_grade", "reason"),
    [
        ("positive", NARROW, "anecdotal", "observed", POSITIVE_NARROW),
        ("positive", BROAD, "observed", "replicated", POSITIVE_BROAD),
        ("negative", BROAD, "anecdotal", "observed", NEGATIVE_BROAD),
    ],
    ids=["positive/narrow", "positive/broad", "negative/broad"],
)
def test_it_admits_a_graded_claim_from_the_minimum_grade_up(
    polarity, scope, rejected_grade, accepted_grade, reason
):
    below = judge(draft(polarity, rejected_grade, scope))
    assert not below.accepted
    assert below.reason == reason
    assert judge(draft(polarity, accepted_grade, scope)).accepted


@pytest.mark.parametrize("grade", ["replicated", "verified"])
def test_it_accepts_a_positive_broad_claim_above_the_minimum(grade):
    assert judge(draft("positive", grade, BROAD)).accepted


def test_it_rejects_a_broad_positive_claim_without_any_scope():
    decision = judge(draft("positive", "observed", Scope()))
    assert decision.reason == POSITIVE_BROAD


@pytest.mark.parametrize(
    ("polarity", "scope", "width"),
    [
        ("negative", NARROW, "narrow"),
        ("cautionary", NARROW, "narrow"),
        ("cautionary", BROAD, "broad"),
        ("cautionary", Scope(), "broad"),
    ],
)
def test_it_rejects_a_provenance_claim_without_provenance_even_when_verified(polarity, scope, width):
    decision = judge(draft(polarity, "verified", scope))
    assert not decision.accepted
    assert decision.reason == provenance_reason(polarity, width)


WITH_PROVENANCE = {
    "narrow": {
        "artifact_refs": (NARROW, ("s3://runs/42/log.txt",)),
        "env": (Scope(model="gpt-5", env="prod"), ()),
        "version": (Scope(model="gpt-5", version="1.4.2"), ()),
    },
    "broad": {
        "artifact_refs": (BROAD, ("s3://runs/42/log.txt",)),
        "env": (Scope(env="prod"), ()),
        "version": (Scope(version="1.4.2"), ()),
    },
}


@pytest.mark.parametrize(
    ("polarity", "width"),
    [("negative", "narrow"), ("cautionary", "narrow"), ("cautionary", "broad")],
)
@pytest.mark.parametrize("provenance", ["artifact_refs", "env", "version"])
def test_it_accepts_a_provenance_claim_with_any_one_kind_of_provenance(polarity, width, provenance):
    scope, artifact_refs = WITH_PROVENANCE[width][provenance]
    candidate = draft(polarity, "anecdotal", scope, artifact_refs=artifact_refs)
    assert (candidate.scope.breadth >= 2) == (width == "narrow")
    assert judge(candidate).accepted


def test_it_counts_six_facets_for_breadth_and_never_the_note():
    assert Scope().breadth == 0
    assert Scope(note="on the March eval set").breadth == 0
    assert Scope(model="m", dataset="d", env="e", version="v", n=1, seed=2, note="x").breadth == 6
    # Zero is a value, not an absence.
    assert Scope(n=0, seed=0).breadth == 2


def test_it_judges_one_facet_broad_and_two_narrow():
    one = draft("positive", "observed", Scope(model="gpt-5", note="a long note that is not a facet"))
    two = draft("positive", "observed", Scope(model="gpt-5", seed=0))
    assert judge(one).reason == POSITIVE_BROAD
    assert judge(two).accepted


@pytest.mark.parametrize("role", ["redteam", "red_team", "Red-Team", "RED TEAM", " red.team! "])
def test_it_bumps_a_red_team_negative_claim_one_grade(role):
    assert judge(draft("negative", "anecdotal", BROAD, author_role=role)).accepted


@pytest.mark.parametrize("role", [None, "", "red", "blue_team", "redteamer", "red team lead"])
def test_it_does_not_bump_an_author_who_is_not_red_team(role):
    decision = judge(draft("negative", "anecdotal", BROAD, author_role=role))
    assert not decision.accepted
    assert decision.reason == NEGATIVE_BROAD


@pytest.mark.parametrize(
    ("sent", "judged"),
    [
        ("anecdotal", "observed"),
        ("observed", "replicated"),
        ("replicated", "verified"),
        ("verified", "verified"),
    ],
)
@pytest.mark.parametrize("polarity", ["negative", "cautionary"])
def test_it_judges_red_team_claims_one_grade_higher_capped_at_verified(polarity, sent, judged):
    assert judged_grade(draft(polarity, sent, author_role="Red-Team")) == judged


@pytest.mark.parametrize("polarity", ["positive", "open"])
def test_it_never_bumps_positive_or_open_claims(polarity):
    assert judged_grade(draft(polarity, "anecdotal", author_role="redteam")) == "anecdotal"
    assert judged_grade(draft(polarity, "observed", author_role="redteam")) == "observed"


def test_it_still_rejects_a_red_team_positive_claim_below_the_minimum():
    assert judge(draft("positive", "anecdotal", NARROW, author_role="redteam")).reason == POSITIVE_NARROW
    assert judge(draft("positive", "observed", BROAD, author_role="redteam")).reason == POSITIVE_BROAD


def test_it_keeps_the_grade_the_client_sent_on_a_bumped_claim():
    candidate = validate_deposit(
        "alice", {"content": "fails on cold start", "polarity": "negative", "author_role": "red_team"}
    )
    assert judge(candidate).accepted
    assert candidate.evidence_grade == "anecdotal"
