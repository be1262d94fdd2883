"""Stored strings are text on every deposit page: markup in them is shown, never run."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.utils.html import escape

from deposits.domain.validation import validate_correction
from deposits.models import Deposit
from deposits.services.deposits import deposit_contradict, deposit_retract
from tests.deposits.dashboard import XSS, logged_in, write

pytestmark = pytest.mark.django_db

SCRIPT, IMG = XSS
SCOPE = {"model": SCRIPT, "env": IMG}


def hostile() -> dict[str, str]:
    """A bag in conflict whose every stored string is markup: content, author, reasons, belief, facets."""
    first = write(
        "alice", "positive", SCRIPT, SCOPE, author=IMG, author_role=SCRIPT, task_id=IMG, tags=[SCRIPT],
        artifact_refs=[IMG], belief={"key": "xss_probe", "value": SCRIPT},
    )  # fmt: skip
    second = write("alice", "negative", IMG, SCOPE, author=SCRIPT, belief={"key": "xss_probe", "value": IMG})
    data = {
        "content": f"{SCRIPT} threshold fails", "polarity": "negative", "evidence_grade": "verified",
        "artifact_refs": [SCRIPT], "contradicts": [second], "reason": IMG, "author": IMG,
    }  # fmt: skip
    third = deposit_contradict(correction=validate_correction("alice", data), channel=None).id
    deposit_retract(user_id="alice", deposit_id=second, reason=SCRIPT)
    bag = Deposit.objects.get(pk=first).bag_id
    return {"first": first, "second": second, "third": third, "bag": bag}


def assert_text(html: str) -> None:
    for raw in XSS:
        assert raw not in html
    assert escape(SCRIPT) in html or escape(IMG) in html


def test_the_queue_the_bag_the_deposits_and_the_playground_show_markup_as_text():
    ids = hostile()
    client = logged_in("operator")
    pages = [
        "/conflicts/",
        f"/owners/alice/bags/{ids['bag']}/",
        *(f"/owners/alice/deposits/{ids[name]}/" for name in ("first", "second", "third")),
        "/owners/alice/recall/?q=threshold",
        "/owners/alice/recall/?" + urlencode({"q": "threshold", "model": SCRIPT, "env": IMG}),
    ]
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        assert_text(response.content.decode())
        if "/recall/" in path:  # the hit whose content and author are markup is among the hits
            assert f'data-deposit-id="{ids["third"]}"' in response.content.decode()


def test_messages_and_refusals_show_markup_as_text():
    ids = hostile()
    client = logged_in("reviewer")
    refused = client.post(
        f"/conflicts/alice/{ids['bag']}/resolve/", {"keep": [ids["first"], ids["third"]], "reason": SCRIPT},
        headers={"HX-Request": "true"},
    )  # fmt: skip
    assert_text(refused.content.decode())
    done = client.post(
        f"/conflicts/alice/{ids['bag']}/resolve/", {"keep": [ids["first"]], "reason": IMG},
        headers={"HX-Request": "true"},
    )  # fmt: skip
    assert "Resolved alice’s bag" in done.content.decode()
    assert_text(done.content.decode())
    retracted = client.post(f"/owners/alice/deposits/{ids['first']}/retract/", {"reason": IMG}, follow=True)
    assert_text(retracted.content.decode())
