"""One number for one thing: every page showing an owner's figure shows the same one.

Or the deployment's, as dashboard.md, "Accessible and honest", asks; read here from each page as a
reader sees it. The one page that heads with a figure of now says so, and names the snapshot's
beside it.

The world is a running deployment between two snapshot runs: snapshots taken, then more writes,
so a live recount and the latest snapshot differ, and a page mixing the two would show it.
"""

from __future__ import annotations

import html as html_lib
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from beliefs.models import Belief
from deposits.models import Deposit
from deposits.selectors.recall import recall
from deposits.services.deposits import recall_record
from diagnostics import selectors
from diagnostics.models import Snapshot
from diagnostics.services import diagnostics_recompute
from tests.deposits.scenario import correct, put
from tests.diagnostics.dashboard import agreeing, belief, conflict, logged_in

pytestmark = pytest.mark.django_db


def text(page: str) -> str:
    """What a reader sees: the tags dropped, the entities read, the spaces collapsed."""
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", page))).strip()


def number(pattern: str, page: str) -> int:
    found = re.search(pattern, page)
    assert found, f"{pattern!r} is not on the page"
    return int(found.group(1))


@pytest.fixture
def between_snapshots():
    """alice and bob snapshotted twice, then written to again, and a new owner since."""
    conflict("alice")
    agreeing("alice")
    settled = [
        put("positive", "the cache helps", {"env": "old"}),
        put("negative", "the cache hurts", {"env": "old"}),
    ]
    correct(settled[:1], "the cache hurts after all", polarity="negative")
    for query in ("backoff export", "threshold"):
        recall_record(user_id="alice", results=recall(user_id="alice", query=query))
    belief("alice", key="pet:name", value="Rex", tier="web_fetch")  # an uncertain belief
    conflict("bob", env="staging")
    diagnostics_recompute(now=timezone.now() - timedelta(hours=2))
    put("positive", "alice's second look", {"env": "dev"}, user="alice")
    put("positive", "bob's second look", {"env": "dev"}, user="bob")
    diagnostics_recompute()
    # After the last run: one more bag each for alice, and an owner no run has seen.
    for env in ("qa", "canary"):
        put("positive", f"alice says {env} is fine", {"env": env}, user="alice")
    put("positive", "erin's first claim", {"env": "prod"}, user="erin")
    latest = Snapshot.objects.get(user_id="alice", is_latest=True)
    assert selectors.health(user_id="alice").fmi != latest.fmi, (
        "the writes since the snapshot move alice's FMI, so a page recounting it would differ"
    )


def owners_row(page: str, user_id: str) -> list[str]:
    row = page.split(f'<a href="/owners/{user_id}/">{user_id}</a>', 1)[1].split("</tr>", 1)[0]
    return [text(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


def test_an_owners_figures_are_the_same_on_every_page_that_shows_them(between_snapshots):
    reviewer = logged_in("reviewer")
    owners = reviewer.get("/owners/").content.decode()
    live, fmi, conflicts, uncertain = (number(r"^(\d+)", cell) for cell in owners_row(owners, "alice")[:4])

    owner = reviewer.get("/owners/alice/").content.decode()
    chart = owner.split('id="fmi-last-30-days"', 1)[1].split("</figure>", 1)[0]
    last_point = re.findall(r'<circle class="mark"[^>]*><title>FMI (\d+) at', chart)[-1]
    health = text(reviewer.get("/health/?owner=alice").content.decode())

    assert {
        "owners list": fmi,
        "owner page, the snapshot's figure it names": number(
            r"the latest snapshot ?'s FMI, (\d+) ?, taken", text(owner)
        ),
        "owner page's trend, its last point": int(last_point),
        "health page": number(r"Latest snapshot .*?: FMI (\d+)", health),
    } == dict.fromkeys(
        [
            "owners list",
            "owner page, the snapshot's figure it names",
            "owner page's trend, its last point",
            "health page",
        ],
        fmi,
    )
    # The owner page heads with the FMI now, and says so: what a resolution there moves at once.
    assert number(r'<span class="fmi-number">(\d+)</span>', owner) == selectors.health(user_id="alice").fmi
    assert re.search(r"Field Maturity Index \W* now, over 30 days of recalls", text(owner))
    assert live == number(r"(\d+) deposits? live in all", text(owner))
    assert live == Deposit.objects.filter(user_id="alice").live().count()  # live, not the snapshot's
    assert conflicts == number(r"(\d+) open conflicts?", text(owner)) == 1
    assert uncertain == Belief.objects.filter(user_id="alice", is_uncertain=True).count() == 1


def test_the_deployments_counts_on_the_overview_are_the_owners_lists(between_snapshots):
    reviewer = logged_in("reviewer")
    owners = reviewer.get("/owners/").content.decode()
    rows = {user: owners_row(owners, user) for user in ("alice", "bob", "erin")}
    column = lambda i: sum(number(r"^(\d+)", cells[i]) for cells in rows.values())  # noqa: E731
    overview = text(reviewer.get("/").content.decode())
    found = re.search(r"holds (\d+) live deposits?\b.*? for (\d+) memory owners?", overview)
    assert found, "the overview says what the deployment holds"
    assert int(found.group(1)) == column(0) == Deposit.objects.live().count()
    assert int(found.group(2)) == number(r"(\d+) owners?\.", text(owners)) == 3
    assert number(r"(\d+) open conflicts?", overview) == column(2) == 2
    assert number(r"(\d+) uncertain beliefs?", overview) == column(3) == 1
    deployment_fmi = number(r'<span class="fmi-number">(\d+)</span>', reviewer.get("/").content.decode())
    assert deployment_fmi == number(
        r"Latest snapshot .*?: FMI (\d+)", text(reviewer.get("/health/").content.decode())
    )
