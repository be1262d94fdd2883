"""An htmx action the login may not take shows the 403 page's message in place."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser import login, screenshot

pytestmark = pytest.mark.urls("tests.dashboard_urls")

ADD_BUTTON = """
document.querySelector('main').insertAdjacentHTML('beforeend',
  '<button id="act" hx-post="/test/operator-action/" hx-target="#act" hx-swap="outerHTML">Act</button>');
htmx.process(document.getElementById('act'));
"""


def test_a_reviewer_posting_an_operator_action_sees_the_refusal_in_place(page: Page):
    login(page, "reviewer")
    page.evaluate(ADD_BUTTON)
    page.get_by_role("button", name="Act").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Not allowed")
    expect(page.get_by_role("alert")).to_contain_text("This needs the operator role")
    expect(page.get_by_role("navigation", name="Dashboard")).to_be_visible()
    screenshot(page, "forbidden-reviewer-htmx")


def test_an_operator_posts_it_with_the_csrf_token_htmx_sends_from_the_body(page: Page):
    login(page, "operator")
    page.evaluate(ADD_BUTTON)
    page.get_by_role("button", name="Act").click()
    expect(page.locator("#done")).to_have_text("Done.")
