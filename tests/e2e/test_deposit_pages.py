"""The deposit page's Retract and Erase, the recall playground, and markup shown as text, in a real browser."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from deposits.domain.validation import validate_correction
from deposits.models import Deposit
from deposits.services.deposits import deposit_contradict
from tests.deposits.dashboard import XSS, split, write
from tests.e2e.browser import login, screenshot


def test_a_reviewer_retracts_after_confirming_and_has_no_erase(page: Page, live_server):
    bag = split(positives=2, negatives=1)
    newer = deposit_contradict(
        correction=validate_correction("alice", {"content": "threshold 0.7 fails only on the old set", "polarity": "positive",
              "evidence_grade": "verified", "artifact_refs": ["s3://runs/9"],
              "contradicts": [bag.negative[0]], "reason": "the failing run used the old set"}),
        channel=None,
    ).id  # fmt: skip
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))
    login(page, "reviewer")
    page.goto(bag.deposit_url(bag.negative[0]))
    expect(page.get_by_role("heading", level=1)).to_contain_text("Deposit")
    expect(page.get_by_role("link", name=newer[:8])).to_have_attribute("href", bag.deposit_url(newer))
    expect(page.get_by_role("button", name="Erase")).to_have_count(0)
    screenshot(page, "deposit-superseded")

    page.goto(bag.deposit_url(bag.positive[0]))
    page.get_by_label("Retract").fill("Measured on the wrong data set")
    page.get_by_role("button", name="Retract").click()
    expect(page.get_by_role("status")).to_contain_text("Retracted deposit")
    expect(page.get_by_text("Measured on the wrong data set")).to_be_visible()
    assert dialogs and dialogs[0].startswith("Retract this deposit?")
    assert Deposit.objects.get(pk=bag.positive[0]).retracted_at is not None
    screenshot(page, "deposit-retracted")

    # Posting Erase anyway, with the session and CSRF token the page has: refused for the role.
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    refused = page.request.post(
        bag.deposit_url(bag.positive[1]) + "erase/", form={"reason": "try"}, headers={"X-CSRFToken": token}
    )
    assert refused.status == 403 and "This needs the operator role" in refused.text()
    assert Deposit.objects.filter(pk=bag.positive[1]).exists()


def test_an_operator_erases_after_confirming(page: Page, live_server):
    bag = split()
    page.on("dialog", lambda dialog: dialog.accept())
    login(page, "operator")
    page.goto(bag.deposit_url(bag.negative[0]))
    page.get_by_label("Erase").fill("GDPR request 12")
    page.get_by_role("button", name="Erase").click()
    expect(page).to_have_url(f"{live_server.url}/owners/alice/")
    assert not Deposit.objects.filter(pk=bag.negative[0]).exists()


def test_markup_in_stored_strings_renders_as_text_and_runs_nothing(page: Page):
    script, img = XSS
    scope = {"model": script, "env": img}
    first = write("alice", "positive", script, scope, author=img, belief={"key": "probe", "value": img})
    write("alice", "negative", f"{img} threshold fails", scope, author=script)
    bag = Deposit.objects.get(pk=first).bag_id
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    login(page, "reviewer")
    for path, name in (
        ("/conflicts/", "conflict-queue-markup"),
        (f"/owners/alice/bags/{bag}/", "bag-markup"),
        (f"/owners/alice/deposits/{first}/", "deposit-markup"),
        ("/owners/alice/recall/?q=threshold", "recall-markup"),
    ):
        page.goto(path)
        expect(page.get_by_text(script).or_(page.get_by_text(img)).first).to_be_visible()
        screenshot(page, name, widths=(1280,))
    assert dialogs == []
    assert page.locator("main script").count() == 0 and page.locator("main img").count() == 0


def test_the_playground_shows_the_hits_and_marks_conflicts_beyond_the_limit(page: Page):
    for env in ("prod", "staging", "dev"):
        split(env=env, positives=2, negatives=1)
    for i in range(3):
        write(
            "alice",
            "positive",
            f"threshold 0.7 holds on canary batch {i}",
            {"model": "gpt-5", "env": "canary"},
        )
    login(page, "reviewer")
    page.goto("/owners/alice/recall/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Recall playground for alice")
    page.get_by_label("Query").fill("threshold holds")
    page.get_by_label("Limit").fill("4")
    page.get_by_role("button", name="Recall").click()
    expect(page.locator("tr[data-deposit-id]")).to_have_count(4)
    expect(page.get_by_role("note")).to_contain_text("beyond the limit")
    expect(page).to_have_url(re.compile(r"/owners/alice/recall/\?q=threshold\+holds&limit=4$"))
    screenshot(page, "recall-playground")
