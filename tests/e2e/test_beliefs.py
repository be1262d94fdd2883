"""An owner's beliefs and one belief in a real browser: filter in place, confirm a value."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from beliefs.models import CalibrationOutcome
from beliefs.services import channel_get_or_create, observation_record
from tests.e2e.browser import login, screenshot


def seed_beliefs() -> None:
    """alice: one belief an agent asserts, one a web page only whispers about (uncertain)."""
    agent = channel_get_or_create(name="support-agent", tier_name="agent_own")
    web = channel_get_or_create(name="web-reader", tier_name="web_fetch")
    observation_record(user_id="alice", key="coffee_ratio", value="4 oz per tbsp", channel=agent)
    observation_record(user_id="alice", key="coffee_ratio", value="<script>alert(1)</script>", channel=web)
    observation_record(user_id="alice", key="diet:milk", value="oat milk", channel=web)


def test_a_reviewer_filters_the_beliefs_and_confirms_one_in_place(page: Page, live_server):
    seed_beliefs()
    login(page, "reviewer")
    page.goto("/owners/alice/beliefs/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Beliefs of alice")
    rows = page.locator("#belief-table tbody tr")
    expect(rows).to_have_count(2)
    screenshot(page, "beliefs")

    page.get_by_label("Uncertain only").check()
    expect(page).to_have_url(re.compile(r"/owners/alice/beliefs/\?uncertain=1$"))
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("nothing asserted")
    page.get_by_label("Uncertain only").uncheck()
    expect(rows).to_have_count(2)

    page.get_by_role("link", name="coffee_ratio").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Belief coffee_ratio of alice")
    expect(page.locator(".set-aside")).to_contain_text("<script>alert(1)</script>")
    value = page.get_by_label("Value")
    expect(value).to_have_value("4 oz per tbsp")
    screenshot(page, "belief")

    value.fill("5 oz per tbsp")
    page.get_by_role("button", name="Confirm").click()
    expect(page.get_by_role("status")).to_contain_text("Confirmed “5 oz per tbsp”")
    expect(page.locator(".verdict-head .fact")).to_have_text("5 oz per tbsp")
    expect(page.get_by_label("Value")).to_have_value("5 oz per tbsp")
    expect(page.locator("#revisions tbody tr")).to_have_count(3)
    expect(page).to_have_url(f"{live_server.url}/owners/alice/beliefs/coffee_ratio/")
    screenshot(page, "belief-confirmed")
    outcome = CalibrationOutcome.objects.get()
    assert (outcome.confirmed_value, outcome.top_value, outcome.correct) == (
        "5 oz per tbsp",
        "4 oz per tbsp",
        False,
    )

    page.get_by_label("Value").fill("")
    page.get_by_role("button", name="Confirm").click()
    expect(page.get_by_role("alert")).to_have_text("Type the value you confirm as true.")
    assert CalibrationOutcome.objects.count() == 1
