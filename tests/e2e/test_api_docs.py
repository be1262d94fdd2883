"""/api/v1/docs: Swagger UI from the server's own static files, with no request leaving the machine."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.browser import screenshot


def test_the_api_docs_render_from_the_servers_own_files(page: Page):
    page.goto("/api/v1/docs")
    # Swagger UI is drawn by its JavaScript from /api/v1/openapi.json: the title proves both loaded.
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Atlaso API", timeout=15_000)
    expect(page.locator(".opblock-summary-path").first).to_be_visible()
    screenshot(page, "api-docs", widths=(1280,))
    # The page fixture fails the test if any request tried to leave the live server.
