"""Logging in, roles in the frame, logging out and throttling, in a real browser."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

from tests.cast import LOGINS, PASSWORD, make_login
from tests.e2e.browser import login, screenshot
from tests.e2e.conftest import CspViolations, OutsideRequests

WRONG = "Please enter a correct username and password"


def submit_login(page: Page, username: str, password: str) -> None:
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state()


def test_a_wrong_password_is_refused_and_the_right_one_lands_on_the_overview(page: Page, live_server):
    make_login("reviewer", password=PASSWORD)
    page.goto("/")
    expect(page).to_have_url(f"{live_server.url}/accounts/login/?next=/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Log in to Atlaso")
    screenshot(page, "login")

    submit_login(page, LOGINS["reviewer"], "not-the-password")
    expect(page.get_by_role("alert")).to_contain_text(WRONG)
    screenshot(page, "login-wrong-password")

    submit_login(page, LOGINS["reviewer"], PASSWORD)
    expect(page).to_have_url(f"{live_server.url}/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Overview")
    expect(page.locator(".account .username")).to_have_text("rita")
    screenshot(page, "overview-reviewer")


def test_a_login_with_no_role_is_refused_in_the_frame_and_told_the_role_it_needs(page: Page):
    login(page, "no-role")
    expect(page.get_by_role("heading", level=1)).to_have_text("Not allowed")
    expect(page.get_by_role("alert")).to_contain_text("needs the reviewer or operator role")
    expect(page.get_by_role("navigation", name="Dashboard").get_by_role("link")).to_have_count(0)
    expect(page.get_by_role("button", name="Log out")).to_be_visible()
    screenshot(page, "forbidden-no-role")


def test_only_operators_see_provenance_in_the_navigation(page: Page):
    nav = page.get_by_role("navigation", name="Dashboard")
    login(page, "reviewer")
    expect(nav.get_by_role("link")).to_have_text(
        ["Overview", "Owners", "Conflicts", "Review desk", "Health", "Jobs"]
    )
    expect(nav.get_by_role("link", name="Overview")).to_have_attribute("aria-current", "page")
    page.get_by_role("button", name="Log out").click()

    login(page, "operator")
    expect(nav.get_by_role("link")).to_have_text(
        ["Overview", "Owners", "Conflicts", "Review desk", "Health", "Jobs", "Provenance"]
    )
    expect(nav.get_by_role("link", name="Provenance")).to_have_attribute("href", "/provenance/")
    screenshot(page, "overview-operator")


def test_logging_out_returns_to_the_login_page_and_the_dashboard_is_closed_again(page: Page, live_server):
    login(page, "reviewer")
    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(f"{live_server.url}/accounts/login/")
    expect(page.get_by_role("status")).to_have_text("You are logged out.")
    screenshot(page, "logged-out")
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))


def test_after_five_wrong_passwords_even_the_right_one_is_refused_with_a_clear_message(page: Page):
    make_login("reviewer", password=PASSWORD)
    page.goto("/accounts/login/")
    for _ in range(4):
        submit_login(page, LOGINS["reviewer"], "guess")
        expect(page.get_by_role("alert")).to_contain_text(WRONG)
    submit_login(page, LOGINS["reviewer"], "guess")  # the fifth failure locks
    expect(page.get_by_role("alert")).to_contain_text("Too many failed attempts")
    page.goto("/accounts/login/")
    submit_login(page, LOGINS["reviewer"], "guess")  # the sixth is refused unseen
    expect(page.get_by_role("alert")).to_contain_text("Too many failed attempts")
    expect(page.get_by_role("alert")).to_contain_text("paused for 15 minutes")
    screenshot(page, "login-throttled")
    page.goto("/accounts/login/")
    submit_login(page, LOGINS["reviewer"], PASSWORD)
    expect(page.get_by_role("alert")).to_contain_text("Too many failed attempts")
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))


def test_pages_load_everything_from_the_server_itself(page: Page, outside_requests: OutsideRequests):
    login(page, "operator")
    # The stylesheet applied and htmx ran, both served from this server (no CDN).
    assert page.evaluate("typeof window.htmx") == "object"
    assert page.evaluate("getComputedStyle(document.querySelector('.topbar')).display") == "flex"
    assert outside_requests.urls == []


def test_a_request_to_another_host_is_blocked_and_recorded(
    page: Page, outside_requests: OutsideRequests, csp_violations: CspViolations
):
    page.goto("/accounts/login/")
    # The Content-Security-Policy refuses a script's request to another host before it is sent…
    failed = page.evaluate("fetch('https://example.com/tracker.js').then(() => 'reached', () => 'blocked')")
    assert failed == "blocked" and outside_requests.urls == []
    assert csp_violations.seen(page, "connect-src")
    csp_violations.messages.clear()  # seen: the policy works; the page fixture would fail the test
    # …and the guard stops what the policy does not cover, such as going to another site.
    with pytest.raises(PlaywrightError):
        page.goto("https://example.com/tracker.js")
    assert outside_requests.urls == ["https://example.com/tracker.js"]
    outside_requests.urls.clear()  # seen: the guard works; the page fixture would fail the test
