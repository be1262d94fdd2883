"""Browser tests: Playwright driving Debian's Chromium against pytest-django's live server.

Every test here is marked `e2e` (make test runs them once, on PostgreSQL). Without
/usr/bin/chromium they skip with a message saying how to enable them, except under CI=true,
where they fail: CI must run them. One browser serves the whole folder; each test gets a fresh
context whose requests may reach only the live server (any other is blocked and fails the test),
and any Content-Security-Policy violation on any page it opens fails the test too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest
from django.db import connections

from tests.ci import cannot_run
from tests.e2e.browser import WIDTHS, screenshots_folder

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Page, Route

CHROMIUM = Path("/usr/bin/chromium")
HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test in this folder `e2e`, before `-m` selects."""
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    """One headless Chromium for every browser test in this folder."""
    if not CHROMIUM.exists():
        cannot_run(
            f"browser tests need {CHROMIUM}: install it with 'apt-get install chromium'",
            which="browser tests",
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        cannot_run("browser tests need Playwright: pip install -r requirements.txt", which="browser tests")
    # Playwright's sync API marks an event loop as running in this thread, and Django refuses
    # database calls from a thread with a running loop unless told it is safe: it is, the
    # test and the live server each use their own connection. Only while the browser runs.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    # With a loop running, Django keeps this thread's connections apart from the ones made
    # before (asgiref's Local), so the copy of the migrations' rows that serialized rollback
    # restores after each test must be handed to the new connections.
    serialized = {
        conn.alias: conn._test_serialized_contents
        for conn in connections.all()
        if hasattr(conn, "_test_serialized_contents")
    }
    try:
        with sync_playwright() as playwright:
            for alias, contents in serialized.items():
                connections[alias]._test_serialized_contents = contents
            chromium = playwright.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
            )
            yield chromium
            chromium.close()
            connections.close_all()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(autouse=True)
def fast_passwords(settings: Any) -> None:
    """Hash the cast's passwords in microseconds, not the second PBKDF2 takes here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@dataclass
class OutsideRequests:
    """Requests the page tried to send anywhere but the live server (all blocked)."""

    origin: str
    urls: list[str] = field(default_factory=list)

    def guard(self, route: Route) -> None:
        url = route.request.url
        if urlsplit(url).netloc == self.origin:
            route.continue_()
        else:
            self.urls.append(url)
            route.abort("blockedbyclient")


@pytest.fixture
def outside_requests(live_server: Any) -> OutsideRequests:
    return OutsideRequests(origin=urlsplit(live_server.url).netloc)


# Reports each violation on the console, where CspViolations reads it. Playwright runs this
# before the page's own scripts, and the page's policy does not apply to it.
REPORT_CSP_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (event) => {
  console.error(`CSP violation: ${event.effectiveDirective} refused ${event.blockedURI || "inline"}`
    + ` at ${event.sourceFile || document.location.pathname}:${event.lineNumber}`);
});
"""


@dataclass
class CspViolations:
    """Content-Security-Policy violations the pages reported, with the page each was on."""

    messages: list[str] = field(default_factory=list)

    def watch(self, message: ConsoleMessage) -> None:
        text = message.text
        # Chromium logs "Refused to … because it violates the following Content Security Policy
        # directive"; the event listener above logs the rest.
        if "Content Security Policy" in text or text.startswith("CSP violation"):
            self.messages.append(f"{message.page.url if message.page else '?'}: {text}")

    def seen(self, page: Page, directive: str) -> bool:
        """Whether the page's own violation event for `directive` came (it follows the refusal)."""
        for _ in range(100):
            if any(f"CSP violation: {directive}" in message for message in self.messages):
                return True
            page.wait_for_timeout(50)
        return False


@pytest.fixture
def csp_violations() -> CspViolations:
    return CspViolations()


@pytest.fixture
def page(
    browser: Browser,
    live_server: Any,
    transactional_db: None,
    django_db_serialized_rollback: None,
    outside_requests: OutsideRequests,
    csp_violations: CspViolations,
) -> Iterator[Page]:
    """A fresh browser context on the live server (relative URLs work); nothing else reachable.

    Serialized rollback: the flush after a transactional test would otherwise take the rows
    migrations seed (tiers, the reviewer and operator groups) from the tests that follow.
    """
    context = browser.new_context(base_url=live_server.url, viewport={"width": WIDTHS[0], "height": 800})
    context.set_default_timeout(10_000)
    context.route("**/*", outside_requests.guard)
    context.add_init_script(REPORT_CSP_VIOLATIONS)
    context.on("console", csp_violations.watch)
    tab = context.new_page()
    yield tab
    context.close()
    if outside_requests.urls:
        pytest.fail(f"the page tried to reach beyond the live server: {outside_requests.urls}", pytrace=False)
    if csp_violations.messages:
        pytest.fail(f"the Content-Security-Policy refused: {csp_violations.messages}", pytrace=False)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    folder = screenshots_folder()
    if folder is not None:
        terminalreporter.write_sep("-", "browser screenshots")
        terminalreporter.write_line(f"screenshots of the pages are in {folder}")
