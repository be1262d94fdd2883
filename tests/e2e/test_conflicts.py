"""Working through the conflict queue in a real browser: with htmx in place, and without JavaScript."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from playwright.sync_api import Browser, Page, expect

from deposits.models import Deposit
from tests.conftest import make_client
from tests.deposits.dashboard import split
from tests.e2e.browser import WIDTHS, login, screenshot
from tests.e2e.conftest import OutsideRequests


def queue_of_three():
    now = timezone.now()
    return [
        split(owner, env, positives=2, negatives=1, at=now - timedelta(days=days))
        for owner, env, days in (("alice", "prod", 3), ("bob", "staging", 2), ("carol", "prod", 1))
    ]


def has_disagreement(user_id: str, bag_id: str) -> bool:
    answer = make_client(channel="e2e-reader", perms=("read",)).get(f"/users/{user_id}/bags/{bag_id}")
    assert answer.status == 200
    return answer.body["has_disagreement"]


def test_a_reviewer_resolves_the_oldest_conflict_in_place_and_the_next_one_takes_its_place(
    page: Page, live_server
):
    first, second, _third = queue_of_three()
    login(page, "reviewer")
    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Conflicts").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Conflict queue")
    items = page.locator("article.queue-item")
    expect(items).to_have_count(3)
    expect(items.first).to_have_id(f"item-{first.bag_id}")
    screenshot(page, "conflict-queue")

    item = items.first
    for deposit_id in first.positive:
        item.locator(f"#keep-{deposit_id}").check()
    item.get_by_label("Reason").fill("Re-measured on the fixed set: it holds")
    item.get_by_role("button", name="Resolve").click()

    expect(page.get_by_role("status")).to_contain_text("Resolved alice’s bag")
    expect(items).to_have_count(2)
    expect(items.first).to_have_id(f"item-{second.bag_id}")
    expect(page).to_have_url(f"{live_server.url}/conflicts/")
    screenshot(page, "conflict-queue-resolved-in-place")
    assert not has_disagreement(first.user_id, first.bag_id)

    # Kept deposits that disagree: refused in the item, the ticks and the reason still there.
    item = items.first
    item.locator(f"#keep-{second.positive[0]}").check()
    item.locator(f"#keep-{second.negative[0]}").check()
    item.get_by_label("Reason").fill("both?")
    item.get_by_role("button", name="Resolve").click()
    expect(item.get_by_role("alert")).to_contain_text("the deposits you kept disagree")
    expect(page.locator(f"#item-{second.bag_id} #keep-{second.negative[0]}")).to_be_checked()
    expect(page.locator(f"#item-{second.bag_id} textarea[name=reason]")).to_have_value("both?")
    screenshot(page, "conflict-queue-refused", widths=WIDTHS[:1])
    assert has_disagreement(second.user_id, second.bag_id)

    # What holds follows the ticks shown again (a pre-fill is never taken for the reviewer's
    # words), and the claim written is what it says.
    holds = page.locator(f"#item-{second.bag_id}").get_by_label("What holds")
    page.locator(f"#item-{second.bag_id} #keep-{second.negative[0]}").uncheck()
    positive = Deposit.objects.get(pk=second.positive[0]).content
    expect(holds).to_have_value(positive)
    page.locator(f"#item-{second.bag_id}").get_by_role("button", name="Resolve").click()
    expect(page.get_by_role("status")).to_contain_text("Resolved bob’s bag")
    assert Deposit.objects.get(channel="human_review", user_id=second.user_id).content == positive


def test_without_javascript_the_form_posts_and_comes_back_to_the_queue(
    browser: Browser,
    live_server,
    transactional_db,
    django_db_serialized_rollback,
    outside_requests: OutsideRequests,
):
    first, second, _ = queue_of_three()
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    context.route("**/*", outside_requests.guard)
    page = context.new_page()
    try:
        login(page, "reviewer")
        page.goto("/conflicts/?owner=bo")
        item = page.locator("article.queue-item").first
        expect(item).to_have_id(f"item-{second.bag_id}")
        item.locator(f"#keep-{second.negative[0]}").check()
        item.get_by_label("Reason").fill("The staging run fails")
        item.get_by_role("button", name="Resolve").click()
        expect(page).to_have_url(f"{live_server.url}/conflicts/?owner=bo")
        expect(page.get_by_role("status")).to_contain_text("Resolved bob’s bag")
        expect(page.locator("article.queue-item")).to_have_count(0)
        expect(page.locator(".empty")).to_contain_text("No open conflicts for owners starting with “bo”")
        screenshot(page, "conflict-queue-no-javascript", widths=WIDTHS[:1])
    finally:
        context.close()
    assert not has_disagreement(second.user_id, second.bag_id)
    assert has_disagreement(first.user_id, first.bag_id)
    assert outside_requests.urls == []


def test_a_bag_too_big_for_the_preview_is_resolved_on_its_page(page: Page, live_server):
    bag = split("dora", positives=5, negatives=2)
    login(page, "reviewer")
    page.goto("/conflicts/")
    page.get_by_role("link", name="Resolve on the bag page").click()
    expect(page).to_have_url(f"{live_server.url}{bag.url}")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Bag of dora")
    screenshot(page, "bag-in-conflict")
    for deposit_id in bag.negative:
        page.locator(f"#keep-{deposit_id}").check()
    page.get_by_label("Reason").fill("Both negative runs are on the fixed set")
    page.get_by_role("button", name="Resolve").click()
    expect(page.get_by_role("status")).to_contain_text("superseding 5 deposits")
    expect(page.locator(".facts .badge.resolved")).to_have_text("resolved")
    expect(page.get_by_role("button", name="Resolve")).to_have_count(0)
    expect(page).to_have_url(f"{live_server.url}{bag.url}")
    screenshot(page, "bag-resolved")
    assert not has_disagreement(bag.user_id, bag.bag_id)


def test_on_a_phone_the_reason_takes_the_width_of_the_screen(page: Page, live_server):
    """On a phone the reason field takes the screen's width.

    The sticky resolve bar put label, reason and button on one line: on a phone the reason was a
    sliver a few characters wide.
    """
    bag = split("erin", positives=5, negatives=2)
    login(page, "reviewer")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(bag.url)
    reason = page.get_by_label("Reason").bounding_box()
    resolve = page.get_by_role("button", name="Resolve").bounding_box()
    assert reason is not None and resolve is not None
    assert reason["width"] >= 300, reason
    assert resolve["width"] >= 300 and resolve["y"] > reason["y"], resolve
