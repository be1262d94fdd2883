"""/conflicts/: the queue of open conflicts across owners, and Resolve in place."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from deposits.models import Deposit, ScopeBag
from tests.deposits.dashboard import logged_in, resolution_written, split

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true", "HX-Current-URL": "http://testserver/conflicts/"}


def item_ids(html: str) -> list[str]:
    return re.findall(r'<article class="queue-item[^"]*" id="item-(bag_[0-9a-f]+)"', html)


def in_conflict(bag_id: str) -> bool:
    return ScopeBag.objects.filter(pk=bag_id).in_conflict().exists()


def test_it_lists_open_conflicts_across_owners_the_longest_waiting_first():
    now = timezone.now()
    newer = split("bob", at=now - timedelta(hours=3))
    older = split("alice", at=now - timedelta(days=3))
    text = logged_in("reviewer").get("/conflicts/").content.decode()
    assert "<h1>Conflict queue</h1>" in text
    assert item_ids(text) == [older.bag_id, newer.bag_id]
    assert "waiting <time" in text and "3\xa0days" in text
    # Both sides side by side, with grade, author, channel and tier.
    assert "threshold 0.7 holds in prod (run 0)" in text and "threshold 0.7 fails in prod (run 0)" in text
    assert "verified" in text and "agent-7" in text and "agent-a" in text and "agent_own" in text
    assert 'aria-label="1 positive, 1 negative"' in text


def test_the_owner_filter_keeps_owners_starting_with_it():
    split("tenant-a:alice")
    other = split("tenant-b:bob")
    text = logged_in("reviewer").get("/conflicts/?owner=tenant-b:").content.decode()
    assert item_ids(text) == [other.bag_id]
    assert 'value="tenant-b:"' in text


def test_an_empty_queue_says_what_would_fill_it():
    text = logged_in("reviewer").get("/conflicts/?owner=nobody").content.decode()
    assert "No open conflicts for owners starting with “nobody”" in text
    assert "two or more sides" in text


def test_it_pages_twenty_at_a_time_and_a_page_past_the_end_goes_to_the_last():
    bags = [split(f"owner-{i:02d}") for i in range(21)]
    client = logged_in("reviewer")
    first = client.get("/conflicts/").content.decode()
    assert len(item_ids(first)) == 20 and 'href="/conflicts/?page=2"' in first
    second = client.get("/conflicts/?page=2").content.decode()
    assert item_ids(second) == [bags[20].bag_id] and "Page 2 of 2" in second
    assert client.get("/conflicts/?page=9").url == "/conflicts/?page=2"


def test_an_htmx_request_gets_the_queue_alone():
    bag = split()
    response = logged_in("reviewer").get("/conflicts/", headers=HTMX)
    text = response.content.decode()
    assert text.lstrip().startswith('<section id="queue"') and "<html" not in text
    assert item_ids(text) == [bag.bag_id]


def test_each_item_offers_every_live_directional_deposit_to_keep_and_a_reason():
    bag = split(positives=2, negatives=1)
    text = logged_in("reviewer").get("/conflicts/").content.decode()
    kept = re.findall(r'name="keep" value="([0-9a-f-]+)"', text)
    assert sorted(kept) == sorted(bag.positive + bag.negative)
    assert re.search(r'<textarea name="reason"[^>]* required', text)
    assert ">Resolve</button>" in text


def test_a_bag_with_more_deposits_than_the_preview_is_resolved_on_its_bag_page():
    bag = split(positives=4, negatives=1)
    text = logged_in("reviewer").get("/conflicts/").content.decode()
    assert 'name="keep"' not in text and ">Resolve</button>" not in text
    assert "1 more live deposit not shown here" in text
    assert f'<a href="{bag.url}">Resolve on the bag page</a>' in text
    assert "4 live, newest 3 shown" in text


def test_resolving_with_htmx_swaps_in_the_queue_without_the_bag_and_names_what_was_written():
    first, second = split("alice"), split("bob")
    response = logged_in("reviewer").post(
        first.resolve_url,
        {"keep": first.positive, "reason": "re-measured: it holds", "owner": "", "page": "1"},
        headers=HTMX,
    )
    assert response.status_code == 200
    text = response.content.decode()
    assert text.lstrip().startswith('<section id="queue"')
    assert item_ids(text) == [second.bag_id]
    written = Deposit.objects.get(channel="human_review")
    assert f"wrote positive deposit {written.pk} on human_review (verified), superseding 1 deposit" in text
    assert not in_conflict(first.bag_id) and "HX-Push-Url" not in response


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
def test_resolving_from_the_queue_writes_what_holds_as_the_claim_and_the_reason_on_its_edges(headers):
    bag = split(positives=2, negatives=1)
    reviewer = logged_in("reviewer")
    form = reviewer.get("/conflicts/").content.decode()
    assert re.search(rf'<textarea name="holds" id="holds-{bag.bag_id}"', form)
    reason = "Both runs are on the fixed eval set; the failing one was not"
    reviewer.post(
        bag.resolve_url,
        {"keep": bag.positive, "reason": reason, "holds": "threshold 0.7 holds in prod", "page": "1"},
        headers=headers,
    )
    assert resolution_written() == ("threshold 0.7 holds in prod", [reason])


def test_what_holds_left_empty_is_what_the_kept_deposits_say():
    bag = split(positives=2, negatives=1)
    logged_in("reviewer").post(
        bag.resolve_url, {"keep": bag.positive, "reason": "both runs hold", "holds": "  ", "page": "1"}
    )
    claim = "threshold 0.7 holds in prod (run 0)\nthreshold 0.7 holds in prod (run 1)"
    assert resolution_written() == (claim, ["both runs hold"])


def test_resolving_without_javascript_redirects_to_the_queue_it_came_from_with_the_message():
    bags = [split(f"owner-{i:02d}") for i in range(21)]
    client = logged_in("reviewer")
    last = bags[20]
    response = client.post(
        last.resolve_url, {"keep": last.negative, "reason": "it fails", "owner": "owner-", "page": "2"}
    )
    assert response.status_code == 302 and response.url == "/conflicts/?owner=owner-&page=2"
    assert not in_conflict(last.bag_id)
    # Page 2 is empty now: it shows the last page, page 1, with the message.
    page = client.get(response.url, follow=True)
    text = page.content.decode()
    assert page.redirect_chain == [("/conflicts/?owner=owner-", 302)]
    assert "Resolved owner-20’s bag" in text and len(item_ids(text)) == 20


def test_an_htmx_resolution_that_empties_its_page_pushes_the_last_page_url():
    bags = [split(f"owner-{i:02d}") for i in range(21)]
    response = logged_in("reviewer").post(
        bags[20].resolve_url, {"keep": bags[20].positive, "reason": "ok", "page": "2"}, headers=HTMX
    )
    assert response["HX-Push-Url"] == "/conflicts/"
    assert len(item_ids(response.content.decode())) == 20


def test_kept_deposits_that_disagree_are_refused_in_the_item_keeping_what_was_sent():
    bag = split()
    response = logged_in("reviewer").post(
        bag.resolve_url,
        {"keep": [bag.positive[0], bag.negative[0]], "reason": "both hold?", "page": "1"},
        headers=HTMX,
    )
    assert response.status_code == 200
    assert response["HX-Retarget"] == f"#item-{bag.bag_id}" and response["HX-Reswap"] == "outerHTML"
    text = response.content.decode()
    # The item alone, and an out-of-band swap that clears the last success message.
    assert (
        f'<article class="queue-item has-error" id="item-{bag.bag_id}"' in text
        and '<section id="queue"' not in text
    )
    assert '<div id="toast" class="toast" aria-live="polite" hx-swap-oob="true"></div>' in text
    assert "the deposits you kept disagree (negative, positive)" in text
    assert f'value="{bag.positive[0]}" id="keep-{bag.positive[0]}" checked' in text
    assert f'value="{bag.negative[0]}" id="keep-{bag.negative[0]}" checked' in text
    assert ">both hold?</textarea>" in text
    assert Deposit.objects.count() == 2 and in_conflict(bag.bag_id)


def test_without_javascript_a_refusal_shows_the_queue_with_the_item_and_its_input():
    bag = split()
    reviewer = logged_in("reviewer")
    response = reviewer.post(bag.resolve_url, {"reason": "nothing kept", "page": "1"})
    # Back to the queue's own address, so a reload never posts again.
    assert (response.status_code, response.url) == (302, "/conflicts/")
    text = reviewer.get(response.url).content.decode()
    assert "<h1>Conflict queue</h1>" in text and "tick at least one live deposit" in text
    assert ">nothing kept</textarea>" in text and item_ids(text) == [bag.bag_id]
    # Shown once: a reload is the plain queue.
    assert "tick at least one live deposit" not in reviewer.get("/conflicts/").content.decode()


def test_a_second_resolution_of_one_bag_is_told_it_was_already_resolved():
    bag = split()
    rita, otto = logged_in("reviewer"), logged_in("operator")
    rita.post(bag.resolve_url, {"keep": bag.positive, "reason": "first", "page": "1"}, headers=HTMX)
    response = otto.post(
        bag.resolve_url, {"keep": bag.negative, "reason": "second", "page": "1"}, headers=HTMX
    )
    text = response.content.decode()
    assert response["HX-Retarget"] == f"#item-{bag.bag_id}"
    assert "this bag is no longer in conflict: it was resolved meanwhile" in text
    assert "Your reason, not saved: <q>second</q>" in text and ">Resolve</button>" not in text
    assert Deposit.objects.filter(channel="human_review").count() == 1
    # Without JavaScript: the queue (now empty) with the failed item first.
    plain = otto.post(bag.resolve_url, {"keep": bag.negative, "reason": "third", "page": "1"}, follow=True)
    assert item_ids(plain.content.decode()) == [bag.bag_id]
    assert "Your reason, not saved: <q>third</q>" in plain.content.decode()


def test_a_reason_left_empty_is_refused():
    bag = split()
    response = logged_in("reviewer").post(
        bag.resolve_url, {"keep": bag.positive, "reason": "  "}, headers=HTMX
    )
    assert "reason is required" in response.content.decode()
    assert in_conflict(bag.bag_id)


@pytest.mark.parametrize(
    "path", ["/conflicts/nobody/bag_000000000000000000000000/resolve/", "/conflicts/bad%20id/bag_x/resolve/"]
)
def test_resolving_an_unknown_bag_is_a_404_in_the_frame(path):
    response = logged_in("reviewer").post(path, {"keep": ["x"], "reason": "r"})
    assert response.status_code == 404 and "<h1>Not found</h1>" in response.content.decode()


def test_the_queue_page_takes_a_fixed_number_of_queries(django_assert_max_num_queries):
    for i in range(20):
        split(f"owner-{i:02d}", positives=3, negatives=3)
    client = logged_in("reviewer")
    with django_assert_max_num_queries(10):
        text = client.get("/conflicts/").content.decode()
    assert len(item_ids(text)) == 20
