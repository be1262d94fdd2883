"""The review desk, the resolved list, Take over and Undo as pages, without JavaScript.

Forms post and redirect; htmx requests get the desk alone.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from deposits.models import Deposit, Resolution
from deposits.selectors.review import claim_on
from deposits.services.review import bag_resolve, claim_next, resolution_undo
from tests.deposits.dashboard import NARROW, logged_in, resolution_written, split, write
from tests.deposits.scenario import retract

pytestmark = pytest.mark.django_db

DESK = "/conflicts/next/"


def queue(*owners: str):
    now = timezone.now()
    return [split(owner, "prod", at=now - timedelta(days=len(owners) - i)) for i, owner in enumerate(owners)]


def shown(html: str) -> str | None:
    """The bag id of the conflict the desk shows."""
    found = re.search(r'<article class="desk-conflict" id="item-(bag_\w+)"', html)
    return found.group(1) if found else None


def resolve_url(user_id: str, bag_id: str) -> str:
    return f"/conflicts/next/{user_id}/{bag_id}/resolve/"


@pytest.mark.parametrize("path", [DESK, "/conflicts/resolved/"])
def test_the_desk_and_the_resolved_list_are_for_reviewers(client, path):
    assert client.get(path).status_code == 302
    assert logged_in("no-role").get(path).status_code == 403
    assert logged_in("reviewer").get(path).status_code == 200


def test_the_desk_shows_the_oldest_conflict_alone_with_the_reason_first_and_a_holds_button_per_side():
    a, _b = queue("alice", "bob")
    html = logged_in("reviewer").get(DESK).content.decode()
    assert shown(html) == a.bag_id
    assert html.count('class="desk-conflict"') == 1
    form = html[html.index('class="resolve desk-form"') :]
    # The reason is the form's first control, and focused.
    first = re.search(
        r"<(textarea|input(?! type=\"hidden\")|button)[^>]*>", form[form.index("</label>") - 400 :]
    )
    assert first and 'id="desk-reason"' in first.group(0) and "autofocus" in first.group(0)
    assert re.findall(r">(\w+) holds</button>", html) == ["Positive", "Negative"]
    assert "You are on this · 10 min left" in html
    progress = re.sub(r"<[^>]+>|\s+", " ", html[html.index('id="desk-progress"') :][:900])
    assert "2 open conflicts left (this one included)" in re.sub(r" +", " ", progress)
    assert "0 resolved by you today" in re.sub(r" +", " ", progress)


def test_sides_are_shown_positive_negative_cautionary():
    scope = {**NARROW, "env": "ci"}
    for polarity in ("cautionary", "negative", "positive"):
        write("alice", polarity, f"{polarity} claim", scope)
    html = logged_in("reviewer").get(DESK).content.decode()
    assert re.findall(r'data-holds="(\d)"[^>]*>(\w+) holds', html) == [
        ("1", "Positive"),
        ("2", "Negative"),
        ("3", "Cautionary"),
    ]


def test_a_holds_button_resolves_and_the_desk_shows_the_next_conflict_with_an_undo():
    a, b = queue("alice", "bob")
    reviewer = logged_in("reviewer")
    reviewer.get(DESK)
    answer = reviewer.post(resolve_url("alice", a.bag_id), {"reason": "re-measured", "side": "negative"})
    assert answer.status_code == 302 and answer.url == DESK
    html = reviewer.get(DESK).content.decode()
    assert shown(html) == b.bag_id
    assert "Resolved alice’s bag" in html
    undo = re.search(r'action="(/conflicts/resolved/alice/[^"]+/undo/)"', html)
    assert undo, "the confirmation offers Undo"
    assert "1</strong> resolved by you today" in html
    assert {
        str(pk)
        for pk in Deposit.objects.filter(bag_id=a.bag_id).live().directional().values_list("pk", flat=True)
    } >= set(a.negative)
    assert not Deposit.objects.filter(pk__in=a.positive).live().exists()


def test_ticks_and_resolve_work_on_the_desk_and_a_refusal_keeps_what_was_typed():
    (a,) = queue("alice")
    reviewer = logged_in("reviewer")
    reviewer.get(DESK)
    refused = reviewer.post(
        resolve_url("alice", a.bag_id),
        {"reason": "both?", "keep": [a.positive[0], a.negative[0]]},
        follow=True,
    )
    assert refused.redirect_chain == [(DESK, 302)]
    html = refused.content.decode()
    assert "the deposits you kept disagree" in html and ">both?</textarea>" in html
    assert shown(html) == a.bag_id
    done = reviewer.post(resolve_url("alice", a.bag_id), {"reason": "it holds", "keep": a.positive})
    assert done.status_code == 302
    assert Resolution.objects.get(bag_id=a.bag_id).side == "positive"


def test_resolve_on_a_conflict_someone_else_holds_is_refused_naming_them():
    (a,) = queue("alice")
    claim_next(reviewer="rita")
    answer = logged_in("second-reviewer").post(
        resolve_url("alice", a.bag_id), {"reason": "mine", "side": "positive"}, follow=True
    )
    assert answer.redirect_chain == [(DESK, 302)]
    html = answer.content.decode()
    assert "rita is on this · 10 min left" in html and "Take over" in html
    assert not Resolution.objects.exists()


def test_a_conflict_resolved_meanwhile_says_so_keeps_the_reason_and_shows_the_next():
    a, b = queue("alice", "bob")
    reviewer = logged_in("reviewer")
    reviewer.get(DESK)
    retract(a.negative[0], user="alice")  # an agent takes its claim back: no longer a conflict
    answer = reviewer.post(
        resolve_url("alice", a.bag_id), {"reason": "my careful reason", "side": "negative"}, follow=True
    )
    html = answer.content.decode()
    assert "it was resolved meanwhile" in html and "my careful reason" in html
    assert shown(html) == b.bag_id


def test_skip_with_a_note_goes_to_the_next_and_back_to_this_returns():
    a, b = queue("alice", "bob")
    reviewer = logged_in("reviewer")
    reviewer.get(DESK)
    skipped = reviewer.post(
        f"/conflicts/next/alice/{a.bag_id}/skip/", {"note": "ask the data team"}, follow=True
    )
    html = skipped.content.decode()
    assert shown(html) == b.bag_id
    assert "Skipped by you" in html and "ask the data team" in html
    back = reviewer.post(f"/conflicts/next/alice/{a.bag_id}/return/", {}, follow=True)
    assert shown(back.content.decode()) == a.bag_id
    assert claim_on(a.bag_id).reviewer == "rita"


def test_take_over_goes_back_where_it_was_pressed_and_only_to_this_site():
    (a,) = queue("alice")
    claim_next(reviewer="rita")
    remy = logged_in("second-reviewer")
    page = remy.get(a.url).content.decode()
    assert "rita is on this · 10 min left" in page and "Take over" in page
    assert 'name="reason"' not in page  # no Resolve form while someone else holds it
    answer = remy.post(f"/conflicts/alice/{a.bag_id}/take-over/", {"next": "/conflicts/"})
    assert (answer.status_code, answer.url) == (302, "/conflicts/")
    assert claim_on(a.bag_id).reviewer == "remy"
    elsewhere = remy.post(f"/conflicts/alice/{a.bag_id}/take-over/", {"next": "https://evil.example/"})
    assert elsewhere.url == a.url
    # rita's next page says so.
    assert "remy took over alice’s conflict from you" in logged_in("reviewer").get(DESK).content.decode()


def test_the_queue_shows_who_holds_a_conflict_and_offers_take_over_instead_of_resolve():
    a, b = queue("alice", "bob")
    claim_next(reviewer="rita")
    html = logged_in("second-reviewer").get("/conflicts/").content.decode()
    held = html[html.index(f'id="item-{a.bag_id}"') : html.index(f'id="item-{b.bag_id}"')]
    assert "rita is on this · 10 min left" in held and "Take over" in held
    assert f"/conflicts/alice/{a.bag_id}/resolve/" not in held
    free = html[html.index(f'id="item-{b.bag_id}"') :]
    # Each item's controls are described by its own title, so twenty Resolve buttons differ.
    assert f'aria-describedby="title-{b.bag_id}"' in free
    assert re.search(r'<button type="submit" class="primary"[^>]*>Resolve</button>', free)


def test_undo_from_the_resolved_list_brings_the_conflict_back():
    (a,) = queue("alice")
    result = bag_resolve(user_id="alice", bag_id=a.bag_id, keep=a.positive, reason="holds", reviewer="rita")
    remy = logged_in("second-reviewer")
    listed = remy.get("/conflicts/resolved/").content.decode()
    assert "holds" in listed and "rita" in listed and "Undo" in listed
    answer = remy.post(
        f"/conflicts/resolved/alice/{result.deposit.id}/undo/", {"next": "/conflicts/resolved/"}, follow=True
    )
    html = answer.content.decode()
    assert "Undone: alice’s bag is back in conflict" in html
    assert "undone</span> by remy" in html
    assert f'id="item-{a.bag_id}"' in remy.get("/conflicts/").content.decode()
    again = remy.post(f"/conflicts/resolved/alice/{result.deposit.id}/undo/", {}, follow=True)
    assert "Not undone: this resolution is undone already (undone by remy)" in again.content.decode()


def test_undo_from_the_desk_hands_the_conflict_straight_back():
    a, _b = queue("alice", "bob")
    reviewer = logged_in("reviewer")
    reviewer.get(DESK)
    reviewer.post(resolve_url("alice", a.bag_id), {"reason": "oops", "side": "positive"})
    deposit_id = Resolution.objects.get(bag_id=a.bag_id).deposit_id
    answer = reviewer.post(f"/conflicts/resolved/alice/{deposit_id}/undo/", {"next": DESK}, follow=True)
    assert shown(answer.content.decode()) == a.bag_id


def test_the_bag_page_lists_its_resolutions_with_undo():
    (a,) = queue("alice")
    bag_resolve(user_id="alice", bag_id=a.bag_id, keep=a.positive, reason="re-measured", reviewer="rita")
    html = logged_in("reviewer").get(a.url).content.decode()
    section = html[html.index("<h2>Resolutions</h2>") :]
    assert "re-measured" in section and "/undo/" in section


def test_the_resolved_list_filters_mine_and_owner_and_pages():
    a, b = queue("alice", "bob")
    bag_resolve(user_id="alice", bag_id=a.bag_id, keep=a.positive, reason="by rita", reviewer="rita")
    bag_resolve(user_id="bob", bag_id=b.bag_id, keep=b.positive, reason="by remy", reviewer="remy")
    reviewer = logged_in("reviewer")
    mine = reviewer.get("/conflicts/resolved/?mine=1").content.decode()
    assert "by rita" in mine and "by remy" not in mine
    bob = reviewer.get("/conflicts/resolved/?owner=bo").content.decode()
    assert "by remy" in bob and "by rita" not in bob
    past = reviewer.get("/conflicts/resolved/?page=9")
    assert past.status_code == 302 and "page=1" in past.url
    none = reviewer.get("/conflicts/resolved/?owner=zed").content.decode()
    assert "No resolutions for owners starting with “zed” yet." in none


def test_an_empty_desk_says_what_would_fill_it():
    # A NUL in the filter is a 400 page, as in any page's query (tests/test_dashboard_bad_input.py).
    html = logged_in("reviewer").get(DESK + "?owner=ab").content.decode()
    assert "No open conflicts for owners starting with “ab”" in html


def test_the_desk_says_when_every_conflict_is_held_by_someone_else():
    queue("alice")
    claim_next(reviewer="rita")
    html = logged_in("second-reviewer").get(DESK).content.decode()
    assert shown(html) is None
    assert "Every open conflict is being reviewed by someone else." in html


def test_an_htmx_resolve_answers_the_desk_alone_with_the_next_conflict():
    a, b = queue("alice", "bob")
    reviewer = logged_in("reviewer")
    reviewer.get(DESK)
    answer = reviewer.post(
        resolve_url("alice", a.bag_id), {"reason": "holds", "side": "positive"}, HTTP_HX_REQUEST="true"
    )
    html = answer.content.decode()
    assert answer.status_code == 200 and html.lstrip().startswith('<section id="desk"')
    assert shown(html) == b.bag_id
    assert answer.headers["HX-Push-Url"] == DESK
    assert 'data-key="undo"' in html


def test_the_desk_holds_one_conflict_per_reviewer_going_back_to_a_skip_releases_the_one_shown():
    a, b = queue("alice", "bob")
    reviewer = logged_in("reviewer")
    reviewer.get(DESK)
    reviewer.post(f"/conflicts/next/alice/{a.bag_id}/skip/", {})
    assert shown(reviewer.get(DESK).content.decode()) == b.bag_id
    back = reviewer.post(f"/conflicts/next/alice/{a.bag_id}/return/", {}, follow=True)
    assert shown(back.content.decode()) == a.bag_id
    assert claim_on(b.bag_id) is None  # free for the others again


# ---- What holds, and why ---------------------------------------------------------------------


@pytest.mark.parametrize("headers", [{}, {"HX-Request": "true"}], ids=["plain", "htmx"])
def test_a_holds_button_writes_what_holds_as_the_claim_and_the_reason_on_its_edges(headers):
    (a,) = queue("alice")
    reviewer = logged_in("reviewer")
    assert 'name="holds" id="desk-holds"' in reviewer.get(DESK).content.decode()
    reason = "Oat milk asked for twice; the dairy remark was about a guest"
    reviewer.post(
        resolve_url("alice", a.bag_id),
        {"reason": reason, "holds": "Prefers oat milk", "side": "negative"},
        headers=headers,
    )
    assert resolution_written() == ("Prefers oat milk", [reason])


def test_a_holds_button_with_what_holds_left_empty_holds_that_sides_words():
    a = split("alice", positives=1, negatives=2)
    reviewer = logged_in("reviewer")
    reviewer.get(DESK)
    reviewer.post(
        resolve_url("alice", a.bag_id), {"reason": "both runs fail", "holds": "", "side": "negative"}
    )
    claim = "threshold 0.7 fails in prod (run 0)\nthreshold 0.7 fails in prod (run 1)"
    assert resolution_written() == (claim, ["both runs fail"])


def test_ticks_and_resolve_on_the_desk_write_what_holds_and_the_reason():
    (a,) = queue("alice")
    reviewer = logged_in("reviewer")
    reviewer.get(DESK)
    reviewer.post(
        resolve_url("alice", a.bag_id),
        {"reason": "re-measured", "holds": "threshold 0.7 holds", "keep": a.positive},
    )
    assert resolution_written() == ("threshold 0.7 holds", ["re-measured"])


def test_the_resolved_list_shows_what_holds_and_the_reason_apart():
    (a,) = queue("alice")
    bag_resolve(
        user_id="alice",
        bag_id=a.bag_id,
        keep=a.positive,
        reason="re-measured on the fixed set",
        holds="threshold 0.7 holds",
        reviewer="rita",
    )
    html = logged_in("reviewer").get("/conflicts/resolved/").content.decode()
    assert '<span class="held-claim">threshold 0.7 holds</span>' in html
    assert '<td data-label="Reason" class="clip reason">re-measured on the fixed set</td>' in html


# ---- Undo and waiting ----------------------------------------------------------------------


def test_the_last_resolution_is_still_offered_for_undo_after_a_skip():
    a, b, _c = queue("alice", "bob", "carol")
    reviewer = logged_in("reviewer")
    reviewer.get(DESK)
    reviewer.post(resolve_url("alice", a.bag_id), {"reason": "it holds", "side": "positive"})
    skipped = reviewer.post(f"/conflicts/next/bob/{b.bag_id}/skip/", {}, follow=True).content.decode()
    deposit_id = Resolution.objects.get(bag_id=a.bag_id).deposit_id
    assert f'action="/conflicts/resolved/alice/{deposit_id}/undo/"' in skipped
    assert 'data-key="undo"' in skipped
    # Once undone, it is offered no more.
    resolution_undo(user_id="alice", deposit_id=str(deposit_id), reviewer="rita")
    assert 'data-key="undo"' not in reviewer.get(DESK).content.decode()


def waiting(html: str) -> str:
    """What the desk or a queue item says the conflict has waited."""
    found = re.search(r'<span class="waiting">waiting <time[^>]*>([^<]+)</time>', html)
    assert found, "no waiting time shown"
    return found.group(1)


def test_an_undone_conflict_has_waited_since_it_began_not_since_the_undo():
    a = split("alice", at=timezone.now() - timedelta(days=3))
    reviewer = logged_in("reviewer")
    assert waiting(reviewer.get(DESK).content.decode()) == "3\xa0days"
    reviewer.post(resolve_url("alice", a.bag_id), {"reason": "wrong side", "side": "negative"})
    deposit_id = Resolution.objects.get(bag_id=a.bag_id).deposit_id
    desk = reviewer.post(f"/conflicts/resolved/alice/{deposit_id}/undo/", {"next": DESK}, follow=True)
    html = desk.content.decode()
    assert shown(html) == a.bag_id
    assert waiting(html) == "3\xa0days"
    oldest = re.search(r"oldest waiting <strong><time[^>]*>([^<]+)</time>", html)
    assert oldest and oldest.group(1) == "3\xa0days"
    assert waiting(reviewer.get("/conflicts/").content.decode()) == "3\xa0days"
