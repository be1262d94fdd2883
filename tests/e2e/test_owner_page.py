"""The owner page in a real browser: filtering the bags table in place, and its FMI trend chart."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.deposits.scenario import put
from tests.diagnostics.dashboard import agreeing, belief, conflict, snapshots
from tests.e2e.browser import login, screenshot


def an_owner_with_history() -> None:
    conflict("alice", env="prod")
    agreeing("alice", env="staging")
    put(
        "cautionary",
        "batch size above 512 runs out of memory",
        {"model": "gpt-5", "env": "dev"},
        user="alice",
    )
    belief("alice")
    snapshots("alice", [38, 38, 45, 52, 52, 61, 66])


def assert_a_drawn_chart(page: Page, selector: str) -> None:
    """At least two marks drawn, and both axes labelled with ticks."""
    chart = page.locator(selector)
    expect(chart.locator("svg[role=img]")).to_be_visible()
    assert chart.locator("svg .mark").count() >= 2
    assert chart.locator("svg .x-axis .tick-label").count() >= 2
    assert chart.locator("svg .y-axis .tick-label").count() >= 2
    for axis in (".x-axis", ".y-axis"):
        assert (chart.locator(f"svg {axis} .axis-label").text_content() or "").strip()


def test_the_bags_table_filters_in_place_and_the_address_bar_follows(page: Page, live_server):
    an_owner_with_history()
    login(page, "reviewer")
    page.goto("/owners/alice/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Memory owner alice")
    rows = page.locator("#bags tbody tr")
    expect(rows).to_have_count(4)
    screenshot(page, "owner-page")

    # A marker on the window: a full reload would lose it.
    page.evaluate("window.__stillHere = true")
    page.get_by_label("only conflicts").check()
    expect(rows).to_have_count(1)
    expect(page).to_have_url(re.compile(r"/owners/alice/\?.*conflict=1"))
    expect(rows.first.locator(".badge.conflict")).to_be_visible()
    assert page.evaluate("window.__stillHere") is True

    page.get_by_label("only conflicts").uncheck()
    page.get_by_label("env").fill("staging")
    page.get_by_label("env").press("Enter")
    expect(rows).to_have_count(1)
    expect(page).to_have_url(re.compile(r"env=staging"))
    expect(rows.first).to_contain_text("staging")
    assert page.evaluate("window.__stillHere") is True
    screenshot(page, "owner-page-filtered")

    # The address is true: loading it afresh shows the same table.
    page.reload()
    expect(rows).to_have_count(1)
    expect(page.get_by_label("env")).to_have_value("staging")


def test_the_filter_works_without_javascript(
    browser, live_server, transactional_db, django_db_serialized_rollback
):
    an_owner_with_history()
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    page = context.new_page()
    login(page, "reviewer")
    page.goto("/owners/alice/")
    page.get_by_label("only conflicts").check()
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"conflict=1"))
    expect(page.locator("#bags tbody tr")).to_have_count(1)
    context.close()


def test_the_fmi_trend_is_a_drawn_chart_with_labelled_axes(page: Page):
    an_owner_with_history()
    login(page, "reviewer")
    page.goto("/owners/alice/")
    assert_a_drawn_chart(page, "#fmi-last-30-days")
    expect(page.locator("#fmi-last-30-days .x-axis")).to_contain_text("now")
