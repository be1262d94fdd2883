"""The Content-Security-Policy in a real browser: it is enforced, and no page it guards breaks under it.

The page fixture fails any test whose pages report a violation; these tests open every kind of
dashboard page (the demo data loaded, as `make run` has it), use htmx and a confirm button, and
open the API docs.
"""

from __future__ import annotations

import os
import re

from django.core.management import call_command
from playwright.sync_api import Page, expect

from beliefs.services import api_key_create
from deposits.models import Deposit, ScopeBag
from tests.e2e.browser import login
from tests.e2e.conftest import CspViolations


def demo_data() -> None:
    with open(os.devnull, "w") as quiet:
        call_command("load_demo", stdout=quiet)


def test_the_browser_enforces_the_policy_and_the_tests_see_a_violation(
    page: Page, csp_violations: CspViolations
):
    login(page, "reviewer")
    ran = page.evaluate(
        """() => {
            const script = document.createElement("script");
            script.textContent = "window.injected = true";
            document.head.append(script);
            return window.injected === true;
        }"""
    )
    assert ran is False and csp_violations.seen(page, "script-src-elem"), csp_violations.messages
    csp_violations.messages.clear()


def test_every_dashboard_page_works_under_the_policy(page: Page):
    demo_data()
    owner = Deposit.objects.order_by("user_id").values_list("user_id", flat=True).first()
    deposit = Deposit.objects.filter(user_id=owner).first()
    bag = ScopeBag.objects.filter(user_id=owner).first()
    login(page, "superuser")
    paths = [
        "/",
        "/conflicts/",
        "/owners/",
        f"/owners/{owner}/",
        f"/owners/{owner}/bags/{bag.pk}/",
        f"/owners/{owner}/deposits/{deposit.pk}/",
        f"/owners/{owner}/recall/?q=milk",
        f"/owners/{owner}/beliefs/",
        "/health/",
        "/jobs/",
        "/provenance/",
        "/admin/",
    ]
    for path in paths:
        response = page.goto(path)
        assert response is not None and response.status == 200, path
        assert "script-src 'self'" in response.headers["content-security-policy"], path
        expect(page.locator("h1").first).to_be_visible()
    # htmx still swaps in place: the owners list filters as one types.
    page.goto("/owners/")
    page.get_by_role("searchbox").press_sequentially(owner[:3])
    expect(page).to_have_url(re.compile(r"[?&]q="))


def test_a_confirm_button_still_asks_first_and_htmx_still_posts(page: Page):
    api_key_create(name="old agent", channel_name="agent-a", tier_name="agent_own")
    login(page, "operator")
    page.goto("/provenance/")
    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    row = page.locator("tr", has_text="old agent")
    row.get_by_role("button", name="Revoke").click()
    expect(row.get_by_role("button", name="Revoke")).to_be_visible()  # dismissed: nothing sent
    assert asked == ["Revoke the API key “old agent”? Whatever uses it gets 401 from then on."]
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Revoke").click()
    expect(page.locator("tr", has_text="old agent").get_by_role("button", name="Revoke")).to_have_count(0)


def test_the_api_docs_work_under_the_policy(page: Page):
    response = page.goto("/api/v1/docs")
    assert response is not None and "script-src 'self'" in response.headers["content-security-policy"]
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Atlaso API", timeout=15_000)
    operation = page.locator(".opblock-summary").first
    operation.click()
    expect(page.locator(".opblock-body").first).to_be_visible()
