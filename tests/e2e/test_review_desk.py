"""The review desk in a real browser, and again without JavaScript.

Claims between two reviewers, the keys, Skip, Undo, and all of it again without JavaScript.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.utils import timezone
from playwright.sync_api import Browser, Page, expect

from deposits.models import Deposit
from deposits.services.review import claim_bag
from tests.deposits.dashboard import Split, split
from tests.e2e.browser import login, screenshot
from tests.e2e.conftest import REPORT_CSP_VIOLATIONS, CspViolations, OutsideRequests
from tests.e2e.test_conflicts import has_disagreement

DESK = "/conflicts/next/"


def queue(*owners: str) -> list[Split]:
    """One conflict per owner (two positives, one negative), the first the longest waiting."""
    now = timezone.now()
    return [
        split(owner, "prod", positives=2, negatives=1, at=now - timedelta(days=len(owners) - i))
        for i, owner in enumerate(owners)
    ]


def live_polarities(bag: Split) -> list[str]:
    return sorted(
        Deposit.objects.filter(user_id=bag.user_id, bag_id=bag.bag_id)
        .live()
        .directional()
        .values_list("polarity", flat=True)
    )


@contextmanager
def another_context(
    browser: Browser,
    live_server: Any,
    outside_requests: OutsideRequests,
    csp_violations: CspViolations,
    *,
    javascript: bool = True,
) -> Iterator[Page]:
    """A second browser context set up as the `page` fixture's (nothing outside, CSP watched)."""
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": 1280, "height": 800}, java_script_enabled=javascript
    )
    context.set_default_timeout(10_000)
    context.route("**/*", outside_requests.guard)
    context.add_init_script(REPORT_CSP_VIOLATIONS)
    context.on("console", csp_violations.watch)
    try:
        yield context.new_page()
    finally:
        context.close()


def desk_item(page: Page):
    return page.locator("article.desk-conflict")


class Keys:
    """Presses keys on a page and counts them."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.count = 0

    def press(self, key: str) -> None:
        self.page.keyboard.press(key)
        self.count += 1


def focused_id(page: Page) -> str:
    return page.evaluate("document.activeElement && document.activeElement.id")


# ---- 1. Claims between two reviewers -------------------------------------------------------


def test_two_reviewers_get_different_conflicts_a_held_one_is_refused_expires_and_is_taken_over(
    page: Page,
    browser: Browser,
    live_server,
    settings,
    outside_requests: OutsideRequests,
    csp_violations: CspViolations,
):
    alice, bob, carol = queue("alice", "bob", "carol")
    rita = page
    login(rita, "reviewer")
    rita.goto(DESK)
    expect(desk_item(rita)).to_have_id(f"item-{alice.bag_id}")
    expect(rita.locator(f"#claim-{alice.bag_id}")).to_have_text(re.compile(r"You are on this · \d+ min left"))

    with another_context(browser, live_server, outside_requests, csp_violations) as remy:
        login(remy, "second-reviewer")
        remy.goto(DESK)
        expect(desk_item(remy)).to_have_id(f"item-{bob.bag_id}")  # not rita's
        expect(remy.locator("#desk-progress")).to_contain_text("1 held by other reviewers")

        # The queue: rita's conflict says she is on it, offers Take over and no Resolve.
        remy.goto("/conflicts/")
        held = remy.locator(f"#item-{alice.bag_id}")
        expect(held.locator(".claim-line")).to_have_text("rita is on this · 10 min left")
        expect(held.get_by_role("button", name="Take over")).to_have_count(1)
        expect(held.get_by_role("button", name="Resolve")).to_have_count(0)
        expect(held.locator("textarea, input[type=checkbox]")).to_have_count(0)
        expect(held).to_contain_text("rita is reviewing this one")
        mine = remy.locator(f"#item-{bob.bag_id}")
        expect(mine.locator(".claim-line")).to_have_text(re.compile(r"You are on this · \d+ min left"))
        expect(mine.get_by_role("button", name="Resolve")).to_have_count(1)
        screenshot(remy, "conflict-queue-held")

        # Her bag page: Take over in place of the Resolve form; a Resolve posted anyway is refused.
        remy.goto(alice.url)
        expect(remy.locator(".claim-row")).to_contain_text("rita is on this · 10 min left")
        expect(remy.get_by_role("button", name="Take over")).to_be_visible()
        expect(remy.get_by_role("button", name="Resolve")).to_have_count(0)
        token = remy.locator("input[name=csrfmiddlewaretoken]").first.input_value()
        refused = remy.request.post(
            f"/conflicts/next/{alice.user_id}/{alice.bag_id}/resolve/",
            form={"csrfmiddlewaretoken": token, "reason": "It holds", "side": "positive"},
        )
        # Refused, and redirected back to the desk (a reload posts nothing), which says why.
        assert refused.status == 200 and refused.url.endswith("/conflicts/next/"), refused.url
        assert "rita is on this · 10 min left: take it over first" in refused.text()
        refused = remy.request.post(
            alice.resolve_url,
            form={"csrfmiddlewaretoken": token, "reason": "It holds", "keep": alice.positive[0]},
        )
        assert refused.status == 200 and refused.url.endswith("/conflicts/"), refused.url
        assert "rita is on this" in refused.text()
        assert has_disagreement(alice.user_id, alice.bag_id)

        # A short claim: rita's desk renews hers for 1.2 s; once it is past, it is free again.
        settings.ATLASO_CLAIM_MINUTES = 0.02
        rita.reload()
        expect(desk_item(rita)).to_have_id(f"item-{alice.bag_id}")
        settings.ATLASO_CLAIM_MINUTES = 10  # what remy claims next lasts
        time.sleep(1.3)
        remy.goto(DESK)
        expect(desk_item(remy)).to_have_id(f"item-{bob.bag_id}")  # his own still first
        remy.get_by_role("button", name="Skip").click()
        expect(desk_item(remy)).to_have_id(f"item-{alice.bag_id}")  # rita's, expired
        expect(remy.locator(f"#claim-{alice.bag_id}")).to_have_text("You are on this · 10 min left")

        # rita's desk now hands her bob's (remy skipped it: behind the others for him only).
        rita.goto(DESK)
        expect(desk_item(rita)).to_have_id(f"item-{bob.bag_id}")

        # Take over: remy takes bob's from rita on the bag page and holds it.
        remy.goto(bob.url)
        expect(remy.locator(".claim-row")).to_contain_text("rita is on this")
        remy.get_by_role("button", name="Take over").click()
        expect(remy).to_have_url(f"{live_server.url}{bob.url}")
        expect(remy.get_by_role("status").first).to_contain_text("taken over from rita")
        expect(remy.locator(".claim-row")).to_contain_text("You are on this")
        expect(remy.get_by_role("button", name="Resolve")).to_be_visible()

        # rita's next action on her desk is refused, naming remy.
        rita.get_by_label("Why does one side hold?").fill("The rerun on the fixed set holds")
        rita.get_by_role("button", name="Positive holds").click()
        alert = rita.locator("#desk .form-error")
        expect(alert).to_contain_text("Not resolved: remy is on this")
        expect(rita.locator("#desk .messages")).to_contain_text("remy took over bob’s conflict from you")
        assert has_disagreement(bob.user_id, bob.bag_id)
    assert has_disagreement(carol.user_id, carol.bag_id)


# ---- 2. Keyboard only ----------------------------------------------------------------------


def test_the_desk_resolves_from_the_keyboard_in_a_few_presses(page: Page, live_server, figures):
    first, second, third = queue("alice", "bob", "carol")
    login(page, "reviewer")
    page.goto(DESK)
    expect(desk_item(page)).to_have_id(f"item-{first.bag_id}")
    expect(page.locator("#desk-reason")).to_be_focused()
    assert focused_id(page) == "desk-reason"

    # Keys never fire while typing: "s", "1", "j", "u", "?" are part of the reason.
    reason = "Rerun 1 is on the fixed set: it holds (s j u ?)"
    page.keyboard.type(reason)
    page.wait_for_timeout(300)
    expect(desk_item(page)).to_have_id(f"item-{first.bag_id}")
    expect(page.locator("#desk-reason")).to_have_value(reason)
    expect(page.locator("dialog#keys")).not_to_have_attribute("open", "")
    assert has_disagreement(first.user_id, first.bag_id)

    # Esc, then 1: the first side shown (positive) holds.
    keys = Keys(page)
    keys.press("Escape")
    keys.press("1")
    expect(desk_item(page)).to_have_id(f"item-{second.bag_id}")
    expect(page.locator("#desk-reason")).to_be_focused()
    expect(page.locator("#toast .last-resolution")).to_contain_text(
        "Your last resolution: alice’s bag, positive held"
    )
    figures(f"keyboard resolve with a side: {keys.count} key presses after the reason (Escape, 1)")
    assert keys.count <= 6, f"{keys.count} key presses to resolve with '1'"
    assert not has_disagreement(first.user_id, first.bag_id)
    assert live_polarities(first) == ["positive", "positive", "positive"]
    expect(page).to_have_url(f"{live_server.url}{DESK}")

    # Tab to a tick, Space, Ctrl+Enter: Resolve with what is ticked.
    page.keyboard.type("Only the first run is on the fixed set")
    keys = Keys(page)
    pressed = []
    while page.evaluate("document.activeElement.type") != "checkbox" and keys.count < 5:
        keys.press("Tab")
        pressed.append("Tab")
    kept = page.evaluate("document.activeElement.value")
    # The first tick is a positive one (the positives were written at one instant: either).
    assert kept in second.positive, f"Tab reached {kept!r}, not a positive deposit's tick"
    keys.press("Space")
    keys.press("Control+Enter")
    pressed += ["Space", "Control+Enter"]
    expect(desk_item(page)).to_have_id(f"item-{third.bag_id}")
    expect(page.locator("#desk-reason")).to_be_focused()
    expect(page.locator("#desk .messages")).to_contain_text("superseding 2 deposits")
    figures(f"keyboard resolve with ticks: {keys.count} key presses after the reason ({', '.join(pressed)})")
    assert keys.count <= 6, f"{keys.count} key presses to tick and resolve: {pressed}"
    assert not has_disagreement(second.user_id, second.bag_id)
    # The ticked one and the resolution; the other positive went with the negative.
    assert live_polarities(second) == ["positive", "positive"]


# ---- 3. The keys overlay -------------------------------------------------------------------


def test_question_mark_shows_the_keys_and_escape_closes_them(page: Page, live_server):
    queue("alice")
    login(page, "reviewer")
    page.goto(DESK)
    expect(page.locator("#desk-reason")).to_be_focused()
    dialog = page.locator("dialog#keys")
    page.keyboard.press("Escape")  # out of the reason first: "?" there is typed
    page.keyboard.press("?")
    expect(dialog).to_have_attribute("open", "")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("heading", name="Keyboard")).to_be_visible()
    expect(dialog).to_contain_text("Undo the last resolution")
    screenshot(page, "review-desk-keys")
    page.keyboard.press("Escape")
    expect(dialog).not_to_be_visible()
    expect(dialog).not_to_have_attribute("open", "")
    # The button opens it too, and its Close button closes it.
    page.get_by_role("button", name="Keyboard keys").click()
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).not_to_be_visible()


# ---- 4. Skip and back ----------------------------------------------------------------------


def test_skip_moves_on_lists_it_and_back_to_this_returns_it_but_only_for_its_reviewer(
    page: Page,
    browser: Browser,
    live_server,
    outside_requests: OutsideRequests,
    csp_violations: CspViolations,
):
    first, second = queue("alice", "bob")
    login(page, "reviewer")
    page.goto(DESK)
    expect(desk_item(page)).to_have_id(f"item-{first.bag_id}")
    page.get_by_label("Note for yourself").fill("Ask the data team which set run 1 used")
    page.get_by_role("button", name="Skip").click()
    expect(desk_item(page)).to_have_id(f"item-{second.bag_id}")
    expect(page.locator("#desk-reason")).to_be_focused()
    skipped = page.locator(f"#skipped-{first.bag_id}")
    expect(page.get_by_role("heading", name="Skipped by you")).to_be_visible()
    expect(skipped).to_contain_text("alice")
    expect(skipped.locator("q")).to_have_text("Ask the data team which set run 1 used")
    expect(page.locator("#desk .messages")).to_contain_text("Skipped alice’s conflict")
    screenshot(page, "review-desk")

    # Reloading keeps the one shown: the skipped one stays behind.
    page.reload()
    expect(desk_item(page)).to_have_id(f"item-{second.bag_id}")

    skipped.get_by_role("button", name="Back to this").click()
    expect(desk_item(page)).to_have_id(f"item-{first.bag_id}")
    expect(page.get_by_role("heading", name="Skipped by you")).to_have_count(0)

    # Skipped again: behind every other for rita, but remy gets it first (oldest and free).
    page.get_by_role("button", name="Skip").click()
    expect(desk_item(page)).to_have_id(f"item-{second.bag_id}")
    with another_context(browser, live_server, outside_requests, csp_violations) as remy:
        login(remy, "second-reviewer")
        remy.goto(DESK)
        expect(desk_item(remy)).to_have_id(f"item-{first.bag_id}")
    # rita's way back to it is now refused, saying who is on it.
    page.locator(f"#skipped-{first.bag_id}").get_by_role("button", name="Back to this").click()
    expect(page.locator("#desk .messages")).to_contain_text("remy is on it now")
    expect(desk_item(page)).to_have_id(f"item-{second.bag_id}")


# ---- 5. Undo -------------------------------------------------------------------------------


def test_undo_from_the_desk_and_from_the_resolved_list_brings_the_conflict_back(page: Page, live_server):
    first, second = queue("alice", "bob")
    login(page, "reviewer")
    page.goto(DESK)
    expect(desk_item(page)).to_have_id(f"item-{first.bag_id}")
    page.get_by_label("Why does one side hold?").fill("Both positive runs are on the fixed set")
    page.get_by_role("button", name="Positive holds").click()
    expect(desk_item(page)).to_have_id(f"item-{second.bag_id}")
    confirmation = page.locator("#toast .last-resolution")
    expect(confirmation).to_contain_text("Your last resolution: alice’s bag, positive held")
    expect(confirmation.get_by_role("button", name="Undo")).to_be_visible()
    assert not has_disagreement(first.user_id, first.bag_id)

    # The focus is in the next conflict's reason once the swap settles; a key pressed before
    # then is typed into that reason.
    expect(page.locator("#desk-reason")).to_be_focused()
    page.keyboard.press("Escape")
    page.keyboard.press("u")
    expect(page).to_have_url(f"{live_server.url}{DESK}")
    expect(page.get_by_role("status").first).to_contain_text("Undone: alice’s bag is back in conflict")
    # The desk hands the undone conflict straight back.
    expect(desk_item(page)).to_have_id(f"item-{first.bag_id}")
    assert has_disagreement(first.user_id, first.bag_id)
    assert live_polarities(first) == ["negative", "positive", "positive"]

    page.goto("/conflicts/")
    expect(page.locator(f"#item-{first.bag_id}")).to_be_visible()
    page.goto("/conflicts/resolved/")
    row = page.locator("table.resolutions tbody tr").first
    expect(row).to_contain_text("alice")
    expect(row).to_contain_text("Both positive runs are on the fixed set")
    expect(row.locator("td.state")).to_contain_text("undone by rita")
    expect(row.get_by_role("button", name="Undo")).to_have_count(0)

    # Resolve again (the negative holds this time), then Undo from the resolved list.
    page.goto(DESK)
    expect(desk_item(page)).to_have_id(f"item-{first.bag_id}")
    page.get_by_label("Why does one side hold?").fill("The negative run is the only one on the fixed set")
    page.get_by_role("button", name="Negative holds").click()
    expect(desk_item(page)).to_have_id(f"item-{second.bag_id}")
    assert live_polarities(first) == ["negative", "negative"]
    page.goto("/conflicts/resolved/")
    rows = page.locator("table.resolutions tbody tr")
    expect(rows).to_have_count(2)
    newest = rows.first
    expect(newest).to_contain_text("The negative run is the only one")
    expect(newest.locator(".badge.negative")).to_have_text("negative")
    newest.get_by_role("button", name="Undo").click()
    expect(page).to_have_url(f"{live_server.url}/conflicts/resolved/")
    expect(page.get_by_role("status").first).to_contain_text("Undone: alice’s bag is back in conflict")
    expect(rows.first.locator("td.state")).to_contain_text("undone by rita")
    expect(rows.nth(1).locator("td.state")).to_contain_text("undone by rita")
    expect(rows.first.locator(".badge.conflict")).to_have_text("in conflict again")
    screenshot(page, "conflicts-resolved")
    assert has_disagreement(first.user_id, first.bag_id)
    assert live_polarities(first) == ["negative", "positive", "positive"]
    page.goto("/conflicts/")
    expect(page.locator(f"#item-{first.bag_id}")).to_be_visible()


def test_u_after_a_skip_undoes_the_resolution_made_a_moment_before(page: Page, live_server):
    first, second, third = queue("alice", "bob", "carol")
    login(page, "reviewer")
    page.goto(DESK)
    page.get_by_label("Why does one side hold?").fill("Both positive runs are on the fixed set")
    page.get_by_role("button", name="Positive holds").click()
    expect(desk_item(page)).to_have_id(f"item-{second.bag_id}")
    assert not has_disagreement(first.user_id, first.bag_id)

    # Each swap settles by moving the focus into the new conflict's reason: a key pressed before
    # then would be typed there, so each key waits for it.
    expect(page.locator("#desk-reason")).to_be_focused()
    page.keyboard.press("Escape")
    page.keyboard.press("s")  # bob's: not sure
    expect(desk_item(page)).to_have_id(f"item-{third.bag_id}")
    expect(page.locator("#desk .messages")).to_contain_text("Skipped bob’s conflict")
    expect(page.locator("#toast .last-resolution")).to_contain_text("Your last resolution: alice’s bag")

    expect(page.locator("#desk-reason")).to_be_focused()
    page.keyboard.press("Escape")
    page.keyboard.press("u")
    expect(page.get_by_role("status").first).to_contain_text("Undone: alice’s bag is back in conflict")
    expect(page.locator("#key-hint")).not_to_contain_text("No resolution to undo here")
    expect(desk_item(page)).to_have_id(f"item-{first.bag_id}")
    assert has_disagreement(first.user_id, first.bag_id)
    assert live_polarities(first) == ["negative", "positive", "positive"]
    # Nothing left to undo: u says so.
    expect(page.locator("#desk-reason")).to_be_focused()
    page.keyboard.press("Escape")
    page.keyboard.press("u")
    expect(page.locator("#key-hint")).to_have_text("No resolution to undo here.")


# ---- 6. What holds -------------------------------------------------------------------------


def resolution_content() -> str:
    return Deposit.objects.get(channel="human_review", retracted_at__isnull=True).content


def test_what_holds_is_filled_in_from_the_ticks_and_a_side_and_the_reviewers_words_are_kept(
    page: Page, live_server
):
    first, second, third = queue("alice", "bob", "carol")
    login(page, "reviewer")
    page.goto(DESK)
    holds = page.get_by_label("What holds")
    expect(holds).to_have_value("")
    page.get_by_label("Why does one side hold?").fill("The failing run is the only one on the fixed set")

    # Ticking fills it in with what the ticked deposits say; unticking follows.
    page.locator(f"#keep-{first.negative[0]}").check()
    expect(holds).to_have_value("threshold 0.7 fails in prod (run 0)")
    page.locator(f"#keep-{first.negative[0]}").uncheck()
    expect(holds).to_have_value("")

    # A side's button fills it with that side's words, sent as the claim that holds.
    page.keyboard.press("Escape")
    page.keyboard.press("2")
    expect(desk_item(page)).to_have_id(f"item-{second.bag_id}")
    assert resolution_content() == "threshold 0.7 fails in prod (run 0)"
    expect(page.locator("#desk .messages")).to_contain_text(
        "What holds now: “threshold 0.7 fails in prod (run 0)”"
    )

    # The reviewer's own words win over any tick or side.
    page.get_by_label("Why does one side hold?").fill("Both runs passed on the fixed set")
    holds.fill("Threshold 0.7 holds in prod on the fixed eval set")
    page.locator(f"#keep-{second.negative[0]}").check()
    expect(holds).to_have_value("Threshold 0.7 holds in prod on the fixed eval set")
    page.locator(f"#keep-{second.negative[0]}").uncheck()
    page.get_by_role("button", name="Positive holds").click()
    expect(desk_item(page)).to_have_id(f"item-{third.bag_id}")
    written = Deposit.objects.get(channel="human_review", user_id="bob")
    assert written.content == "Threshold 0.7 holds in prod on the fixed eval set"
    assert written.polarity == "positive"


# ---- 7. Without JavaScript -----------------------------------------------------------------


def test_without_javascript_the_desk_resolves_skips_undoes_and_takes_over(
    browser: Browser,
    live_server,
    transactional_db,
    django_db_serialized_rollback,
    outside_requests: OutsideRequests,
    csp_violations: CspViolations,
):
    first, second, third, held = queue("alice", "bob", "carol", "dora")
    assert claim_bag(reviewer="remy", user_id=held.user_id, bag_id=held.bag_id)
    desk_url = f"{live_server.url}{DESK}"
    with another_context(browser, live_server, outside_requests, csp_violations, javascript=False) as page:
        login(page, "reviewer")
        page.goto(DESK)
        expect(desk_item(page)).to_have_id(f"item-{first.bag_id}")

        page.get_by_label("Why does one side hold?").fill("The negative run is the only one on the fixed set")
        page.get_by_role("button", name="Negative holds").click()
        expect(page).to_have_url(desk_url)
        expect(page.locator(".messages")).to_contain_text("Resolved alice’s bag")
        expect(desk_item(page)).to_have_id(f"item-{second.bag_id}")
        assert live_polarities(first) == ["negative", "negative"]

        page.get_by_label("Note for yourself").fill("Later")
        page.get_by_role("button", name="Skip").click()
        expect(page).to_have_url(desk_url)
        expect(desk_item(page)).to_have_id(f"item-{third.bag_id}")
        expect(page.locator(f"#skipped-{second.bag_id} q")).to_have_text("Later")

        page.goto("/conflicts/resolved/")
        row = page.locator("table.resolutions tbody tr").first
        row.get_by_role("button", name="Undo").click()
        expect(page).to_have_url(f"{live_server.url}/conflicts/resolved/")
        expect(row.locator("td.state")).to_contain_text("undone by rita")
        assert has_disagreement(first.user_id, first.bag_id)

        page.goto(held.url)
        expect(page.locator(".claim-row")).to_contain_text("remy is on this")
        expect(page.get_by_role("button", name="Resolve")).to_have_count(0)
        page.get_by_role("button", name="Take over").click()
        expect(page).to_have_url(f"{live_server.url}{held.url}")
        expect(page.locator(".messages")).to_contain_text(
            "You are on dora’s conflict now (taken over from remy)"
        )
        expect(page.locator(".claim-row")).to_contain_text("You are on this")
        expect(page.get_by_role("button", name="Resolve")).to_be_visible()
    assert outside_requests.urls == []
    assert csp_violations.messages == []
