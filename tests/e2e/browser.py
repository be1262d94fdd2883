"""What browser tests call: log in as one of the cast, and keep screenshots of the pages."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from tests.cast import LOGINS, PASSWORD, make_login

if TYPE_CHECKING:
    from playwright.sync_api import Page

# Under var/, so never committed; one folder per run, named by when it started.
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "test-artifacts" / "screenshots"
WIDTHS = (1280, 390)

_run_folder: Path | None = None


def screenshots_folder() -> Path | None:
    """This run's screenshot folder, once a test has taken one."""
    return _run_folder


def login(page: Page, role: str) -> str:
    """Log in through the form as the cast's login for `role`; returns its username."""
    make_login(role, password=PASSWORD)
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(LOGINS[role])
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state()
    return LOGINS[role]


def screenshot(page: Page, name: str, widths: tuple[int, ...] = WIDTHS) -> list[Path]:
    """Full-page PNGs of what the page shows, one per width, in this run's folder."""
    global _run_folder
    if _run_folder is None:
        _run_folder = SCREENSHOTS / datetime.now().strftime("%Y%m%d-%H%M%S")
        _run_folder.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size or {"width": WIDTHS[0], "height": 800}
    paths = []
    for width in widths:
        page.set_viewport_size({"width": width, "height": size["height"]})
        path = _run_folder / f"{name}-{width}.png"
        page.screenshot(path=str(path), full_page=True)
        paths.append(path)
    page.set_viewport_size(size)
    return paths
