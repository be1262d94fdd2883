"""/owners/<user_id>/deposits/<deposit_id>/: every field, provenance, edges, Retract and Erase."""

from __future__ import annotations

import pytest

from deposits.domain.validation import validate_correction
from deposits.models import Deposit
from deposits.services.deposits import deposit_contradict
from tests.deposits.dashboard import logged_in, split, write

pytestmark = pytest.mark.django_db


def chain() -> tuple[str, str, str]:
    """old ← middle ← new: each superseding the one before, with its reason."""
    old = write("alice", "negative", "threshold 0.7 fails")
    ids = [old]
    for content, reason in (
        ("threshold 0.7 holds", "re-measured"),
        ("threshold 0.7 holds, twice", "replicated"),
    ):
        data = {
            "content": content, "polarity": "positive", "evidence_grade": "verified",
            "artifact_refs": ["s3://runs/2"], "contradicts": [ids[-1]], "reason": reason,
        }  # fmt: skip
        ids.append(deposit_contradict(correction=validate_correction("alice", data), channel=None).id)
    return ids[0], ids[1], ids[2]


def test_it_shows_every_field_and_the_provenance():
    deposit = write(
        "alice", "positive", "threshold 0.7 holds", tags=["fraud"], artifact_refs=["s3://runs/7"],
        repro_status="replicated", belief={"key": "fraud_threshold", "value": "0.7"},
        scope={"model": "gpt-5", "env": "prod", "n": 500, "note": "October data"},
    )  # fmt: skip
    text = logged_in("reviewer").get(f"/owners/alice/deposits/{deposit}/").content.decode()
    assert f'<h1>Deposit <code class="h-id">{deposit}</code></h1>' in text
    for shown in (
        "threshold 0.7 holds", "replicated", "<code>s3://runs/7</code>", ">fraud<", "October data",
        "<dt>Scope n</dt><dd>500</dd>", '<a href="/owners/alice/beliefs/fraud_threshold/">fraud_threshold</a>',
        "<dt>Channel</dt><dd>agent-a</dd>", '<span class="tier">agent_own</span>', "<dd>agent-7</dd>",
        "<dd>evaluator</dd>", "<code>task-42</code>", "Not retracted.", 'href="/owners/alice/"',
    ):  # fmt: skip
        assert shown in text, shown


def test_it_links_both_ways_along_the_supersession_chain_with_reasons():
    old, middle, new = chain()
    text = logged_in("reviewer").get(f"/owners/alice/deposits/{middle}/").content.decode()
    superseded_by = text[text.index("Superseded by") : text.index("Supersedes <span")]
    supersedes = text[text.index("Supersedes <span") :]
    assert f'href="/owners/alice/deposits/{new}/"' in superseded_by and "replicated" in superseded_by
    assert f'href="/owners/alice/deposits/{old}/"' in supersedes and "re-measured" in supersedes
    assert '<span class="badge">superseded</span>' in text


def test_a_reviewer_retracts_with_a_reason_and_sees_it_retracted():
    bag = split()
    client = logged_in("reviewer")
    page = client.get(bag.deposit_url(bag.negative[0])).content.decode()
    assert ">Retract</button>" in page and 'data-confirm="Retract this deposit?' in page
    response = client.post(bag.deposit_url(bag.negative[0]) + "retract/", {"reason": "measured wrong"})
    assert response.status_code == 302 and response.url == bag.deposit_url(bag.negative[0])
    row = Deposit.objects.get(pk=bag.negative[0])
    assert row.retracted_at is not None and row.retracted_reason == "measured wrong"
    text = client.get(response.url).content.decode()
    assert "Retracted deposit" in text and "<q>measured wrong</q>" in text and ">Retract</button>" not in text


def test_retracting_without_a_reason_is_refused():
    bag = split()
    response = logged_in("reviewer").post(bag.deposit_url(bag.negative[0]) + "retract/", {"reason": " "})
    assert response.status_code == 422
    assert "Say why this deposit is retracted." in response.content.decode()
    assert Deposit.objects.get(pk=bag.negative[0]).retracted_at is None


def test_a_reviewer_sees_no_erase_button_and_is_refused_erasing():
    bag = split()
    client = logged_in("reviewer")
    assert ">Erase</button>" not in client.get(bag.deposit_url(bag.negative[0])).content.decode()
    response = client.post(bag.deposit_url(bag.negative[0]) + "erase/", {"reason": "GDPR"})
    assert response.status_code == 403
    assert Deposit.objects.filter(pk=bag.negative[0]).exists()


def test_an_operator_erases_and_lands_on_the_owner_page_with_a_message():
    bag = split()
    client = logged_in("operator")
    page = client.get(bag.deposit_url(bag.negative[0])).content.decode()
    assert (
        ">Erase</button>" in page
        and 'data-confirm="Erase deposit ' in page
        and "for good? Its content" in page
    )
    response = client.post(bag.deposit_url(bag.negative[0]) + "erase/", {"reason": "GDPR request 12"})
    assert response.status_code == 302 and response.url == "/owners/alice/"
    assert not Deposit.objects.filter(pk=bag.negative[0]).exists()
    follow = client.get(bag.deposit_url(bag.positive[0])).content.decode()
    assert f"Erased deposit {bag.negative[0]} of alice" in follow


def test_erasing_without_a_reason_is_refused():
    bag = split()
    response = logged_in("operator").post(bag.deposit_url(bag.negative[0]) + "erase/", {"reason": ""})
    assert response.status_code == 422 and Deposit.objects.filter(pk=bag.negative[0]).exists()


@pytest.mark.parametrize(("action", "done"), [("retract", "retracted"), ("erase", "erased")])
def test_a_reason_made_only_of_invisible_characters_is_no_reason(action, done):
    bag = split()
    reason = "\u3164\u2800 \u00ad\u200b"  # a Hangul filler, blank braille, a soft hyphen, a zero-width space
    response = logged_in("operator").post(bag.deposit_url(bag.negative[0]) + f"{action}/", {"reason": reason})
    assert response.status_code == 422
    assert f"Say why this deposit is {done}." in response.content.decode()
    row = Deposit.objects.get(pk=bag.negative[0])
    assert row.retracted_at is None


@pytest.mark.parametrize(
    "path",
    [
        "/owners/alice/deposits/00000000-0000-0000-0000-000000000000/",
        "/owners/alice/deposits/not-a-uuid/",
        "/owners/bob/deposits/{id}/",
        "/owners/b%20b/deposits/{id}/",
        "/owners/alice/deposits/00000000-0000-0000-0000-000000000000/retract/",
        "/owners/alice/deposits/00000000-0000-0000-0000-000000000000/erase/",
    ],
)
def test_an_unknown_deposit_or_owner_is_a_404_in_the_frame(path):
    bag = split()
    client = logged_in("operator")
    path = path.format(id=bag.positive[0])
    response = (
        client.post(path, {"reason": "x"}) if path.endswith(("retract/", "erase/")) else client.get(path)
    )
    assert response.status_code == 404 and "<h1>Not found</h1>" in response.content.decode()


def test_the_deposit_page_takes_a_fixed_number_of_queries(django_assert_max_num_queries):
    _old, middle, _new = chain()
    for i in range(10):
        deposit_contradict(
            correction=validate_correction("alice", {"content": f"also {i}", "polarity": "positive", "evidence_grade": "verified",
                  "artifact_refs": ["s3://x"], "contradicts": [middle], "reason": f"why {i}"}),
            channel=None,
        )  # fmt: skip
    client = logged_in("operator")
    with django_assert_max_num_queries(7):
        text = client.get(f"/owners/alice/deposits/{middle}/").content.decode()
    assert text.count('<p class="edge">') == 12
