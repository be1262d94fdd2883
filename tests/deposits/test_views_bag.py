"""/owners/<user_id>/bags/<bag_id>/: a bag's deposits by polarity, its edges, and Resolve."""

from __future__ import annotations

import re

import pytest

from deposits.domain.validation import validate_correction
from deposits.models import Deposit, ScopeBag
from deposits.services.deposits import deposit_contradict
from deposits.services.review import bag_resolve, resolution_undo
from tests.deposits.dashboard import logged_in, resolution_written, split, write
from tests.deposits.scenario import NARROW

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def correct(user: str, old: str, content: str, reason: str) -> str:
    data = {
        "content": content,
        "polarity": "positive",
        "evidence_grade": "verified",
        "artifact_refs": ["s3://runs/2"],
        "contradicts": [old],
        "reason": reason,
        "author": "agent-9",
    }
    return deposit_contradict(correction=validate_correction(user, data), channel=None).id


def test_it_groups_deposits_by_polarity_with_provenance_and_marks_the_superseded():
    bag = split(positives=1, negatives=2)
    newer = correct(
        "alice", bag.negative[0], "threshold 0.7 holds after the fix", "re-measured on the fixed set"
    )
    write("alice", "open", "ask whether staging matches", NARROW)
    text = logged_in("reviewer").get(bag.url).content.decode()
    assert re.search(r"<h1[^>]*>Bag of <a href=\"/owners/alice/\">alice</a>", text)
    headings = re.findall(r'<h2><span class="badge (\w+)">', text)
    assert headings == ["positive", "negative", "open"]
    assert 'agent-a <span class="tier">agent_own</span>' in text and "(evaluator)" in text
    assert '<code title="s3://runs/1">s3://runs/1</code>' in text
    old_row = re.search(rf'<tr class="superseded">.*?{bag.negative[0][:8]}.*?</tr>', text, re.S)
    assert old_row and f'href="/owners/alice/deposits/{newer}/"' in old_row.group(0)
    # The edge, with its reason, links both deposit pages.
    edges = text[text.index("<h2>Supersession history</h2>") :]
    assert (
        f"/owners/alice/deposits/{newer}/" in edges and f"/owners/alice/deposits/{bag.negative[0]}/" in edges
    )
    assert "re-measured on the fixed set" in edges
    assert '<span class="badge conflict"><a class="term" href="/help/#conflict">conflict</a></span>' in text


def test_resolve_is_offered_for_the_live_directional_deposits_only_when_in_conflict():
    bag = split(positives=2, negatives=1)
    write("alice", "open", "an open note", NARROW)
    client = logged_in("reviewer")
    text = client.get(bag.url).content.decode()
    assert sorted(re.findall(r'name="keep" value="([0-9a-f-]+)"', text)) == sorted(
        bag.positive + bag.negative
    )
    assert ">Resolve</button>" in text
    calm = split("bob", positives=2, negatives=0)
    assert ">Resolve</button>" not in client.get(calm.url).content.decode()


def test_resolving_on_the_bag_page_redirects_to_it_showing_it_resolved():
    bag = split(positives=2, negatives=1)
    client = logged_in("reviewer")
    response = client.post(f"{bag.url}resolve/", {"keep": bag.positive[:1], "reason": "the run holds"})
    assert response.status_code == 302 and response.url == bag.url
    text = client.get(bag.url).content.decode()
    assert (
        '<span class="badge resolved"><a class="term" href="/help/#resolved">resolved</a></span>' in text
        and ">Resolve</button>" not in text
    )
    assert "Resolved alice’s bag" in text and "superseding 2 deposits" in text
    assert not ScopeBag.objects.filter(pk=bag.bag_id).in_conflict().exists()


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
def test_resolving_on_the_bag_page_writes_what_holds_as_the_claim_and_the_reason_on_its_edges(headers):
    bag = split(positives=1, negatives=2)
    client = logged_in("reviewer")
    assert re.search(r'<textarea name="holds" id="holds"', client.get(bag.url).content.decode())
    reason = "Two runs on the fixed set fail; the passing one used the old set"
    client.post(
        f"{bag.url}resolve/",
        {"keep": bag.negative, "reason": reason, "holds": "threshold 0.7 fails in prod"},
        headers=headers,
    )
    assert resolution_written() == ("threshold 0.7 fails in prod", [reason])
    listed = client.get(bag.url).content.decode()
    resolutions = listed[listed.index("<h2>Resolutions</h2>") : listed.index("<h2>Supersession history</h2>")]
    assert "threshold 0.7 fails in prod" in resolutions and reason in resolutions


def test_a_refused_resolution_on_the_bag_page_keeps_what_holds_as_typed():
    bag = split()
    response = logged_in("reviewer").post(
        f"{bag.url}resolve/", {"reason": "", "holds": "my words for it", "keep": bag.positive}, headers=HTMX
    )
    assert ">my words for it</textarea>" in response.content.decode()
    assert not Deposit.objects.filter(channel="human_review").exists()


def test_an_undone_resolutions_edges_are_marked_undone_beside_the_live_deposits():
    bag = split(positives=1, negatives=2)
    agent = correct("alice", bag.negative[1], "threshold 0.7 holds after the fix", "re-measured")
    result = bag_resolve(
        user_id="alice", bag_id=bag.bag_id, keep=[*bag.positive, agent], reason="both hold", reviewer="rita"
    )
    resolution_undo(user_id="alice", deposit_id=result.deposit.id, reviewer="remy")
    text = logged_in("reviewer").get(bag.url).content.decode()
    rows = re.findall(r"<tr[^>]*>.*?</tr>", text[text.index("<h2>Supersession history</h2>") :], re.S)
    undone = [row for row in rows if f"/deposits/{result.deposit.id}/" in row]
    assert len(undone) == 1, undone  # its edge to the negative deposit live again
    assert re.search(r'<span class="badge retracted" title="undone by remy[^"]*">undone</span>', undone[0])
    assert f"/deposits/{bag.negative[0]}/" in undone[0]
    rows_of_deposits = re.findall(r'<tr class="(\w+)">((?:(?!</tr>).)*)</tr>', text, re.S)
    (state,) = [state for state, row in rows_of_deposits if f'value="{bag.negative[0]}"' in row]
    assert state == "live"
    # An edge that still supersedes carries no mark.
    (kept,) = [row for row in rows if f"/deposits/{agent}/" in row]
    assert "undone" not in kept and "retracted" not in kept


def test_resolving_with_htmx_swaps_in_the_bag_resolved():
    bag = split()
    response = logged_in("reviewer").post(
        f"{bag.url}resolve/", {"keep": bag.negative, "reason": "it fails"}, headers=HTMX
    )
    text = response.content.decode()
    assert response.status_code == 200 and text.lstrip().startswith('<div id="bag"')
    assert (
        '<span class="badge resolved"><a class="term" href="/help/#resolved">resolved</a></span>' in text
        and 'role="status"' in text
    )
    written = Deposit.objects.get(channel="human_review")
    assert (written.polarity, written.author, written.author_role) == ("negative", "rita", "reviewer")


def test_a_refused_resolution_keeps_the_reviewers_input():
    bag = split()
    response = logged_in("reviewer").post(
        f"{bag.url}resolve/", {"keep": bag.positive + bag.negative, "reason": "both"}, headers=HTMX
    )
    text = response.content.decode()
    assert "Not resolved: the deposits you kept disagree" in text and ">both</textarea>" in text
    assert text.count("checked") == 2 and Deposit.objects.count() == 2


def test_a_second_resolution_is_told_the_bag_was_already_resolved():
    bag = split()
    logged_in("reviewer").post(f"{bag.url}resolve/", {"keep": bag.positive, "reason": "first"})
    response = logged_in("operator").post(
        f"{bag.url}resolve/", {"keep": bag.negative, "reason": "second"}, follow=True
    )
    assert response.redirect_chain == [(bag.url, 302)]  # a reload does not post again
    assert "it was resolved meanwhile" in response.content.decode()
    assert Deposit.objects.filter(channel="human_review").count() == 1


@pytest.mark.parametrize(
    "path",
    [
        "/owners/alice/bags/bag_000000000000000000000000/",
        "/owners/nobody/bags/bag_000000000000000000000000/",
        "/owners/alice/bags/not-a-bag/",
        "/owners/-bad-/bags/bag_000000000000000000000000/",
    ],
)
def test_an_unknown_bag_or_owner_is_a_404_in_the_frame(path):
    split()
    response = logged_in("reviewer").get(path)
    assert response.status_code == 404
    text = response.content.decode()
    assert "<h1>Not found</h1>" in text and 'class="topbar"' in text


def test_a_bag_of_many_deposits_takes_a_fixed_number_of_queries(django_assert_max_num_queries):
    bag = split(positives=40, negatives=40)
    for old in bag.negative[:10]:
        correct("alice", old, f"correction of {old[:8]}", "re-measured")
    client = logged_in("reviewer")
    with django_assert_max_num_queries(10):  # the bag, its deposits, tiers, edges, claim, resolutions…
        text = client.get(bag.url).content.decode()
    assert text.count('<tr class="superseded">') == 10 and text.count('name="keep"') == 80
