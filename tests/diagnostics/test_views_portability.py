"""The owner page's Export and Forget this owner.

Export for reviewers and operators; Forget for operators, after a page naming the owner and what
goes, with the id typed again.
"""

from __future__ import annotations

import json

import pytest

from deposits.models import Deposit, ScopeBag
from tests.diagnostics.dashboard import agreeing, belief, conflict, logged_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice() -> None:
    conflict("alice", env="prod")
    agreeing("alice", env="staging")
    belief("alice")


def test_a_reviewer_may_export_an_owner_but_only_an_operator_is_offered_forgetting(alice):
    reviewer, operator = logged_in("reviewer"), logged_in("operator")
    page = reviewer.get("/owners/alice/").content.decode()
    assert '<a class="button" href="/owners/alice/export/" download>Export</a>' in page
    assert "/owners/alice/forget/" not in page
    assert (
        '<a class="button danger" href="/owners/alice/forget/">Forget this owner</a>'
        in operator.get("/owners/alice/").content.decode()
    )
    assert reviewer.get("/owners/alice/forget/").status_code == 403
    assert reviewer.post("/owners/alice/forget/", {"confirm": "alice"}).status_code == 403
    assert Deposit.objects.filter(user_id="alice").count() == 6


def test_export_downloads_the_owners_file(alice):
    response = logged_in("reviewer").get("/owners/alice/export/")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="alice.atlaso.jsonl"'
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert lines[0]["kind"] == "atlaso_export" and lines[0]["counts"]["deposits"] == 6
    assert sum(line["kind"] == "deposit" for line in lines) == 6
    assert logged_in("reviewer").get("/owners/nobody/export/").status_code == 404


def test_forgetting_asks_for_the_id_typed_again_and_names_what_goes(alice):
    operator = logged_in("operator")
    page = operator.get("/owners/alice/forget/").content.decode()
    assert '<h1>Forget <span class="owner-id">alice</span></h1>' in page
    assert "<strong>6</strong> deposits" in page and "<strong>3</strong> bags" in page
    assert "<strong>1</strong> belief observation" in page
    assert '<button type="submit" class="danger solid">Forget this owner</button>' in page
    wrong = operator.post("/owners/alice/forget/", {"confirm": "alic"})
    assert wrong.status_code == 422
    assert "The id typed is not this owner" in wrong.content.decode()
    assert Deposit.objects.filter(user_id="alice").count() == 6
    done = operator.post("/owners/alice/forget/", {"confirm": "alice"}, follow=True)
    assert done.redirect_chain == [("/owners/", 302)]
    assert "Forgot alice: 6 deposits, 0 edges, 1 observation and 1 belief deleted" in done.content.decode()
    assert not ScopeBag.objects.filter(user_id="alice").exists()
    assert operator.get("/owners/alice/").status_code == 404
    assert operator.get("/owners/alice/forget/").status_code == 404
