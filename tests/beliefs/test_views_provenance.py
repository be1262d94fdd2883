"""Provenance: tiers (the rebuild a ceiling costs, then its progress), channels, keys, history."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import DatabaseError, transaction
from django.urls import reverse
from django.utils import timezone

from atlaso_site.access.models import ApiKey, Channel, ProvenanceTier
from atlaso_site.job_runs.models import JobRun
from beliefs.models import ProvenanceChange
from beliefs.selectors import channel_belief_counts, tier_rebuild_counts
from beliefs.services import api_key_create, api_key_revoke, tier_update
from diagnostics.job_runner import job_execute
from tests.beliefs.dashboard import XSS, believe, channel
from tests.cast import make_login
from tests.conftest import ApiClient, make_client

pytestmark = pytest.mark.django_db

PAGE = "/provenance/"


@pytest.fixture
def operator(client):
    client.force_login(make_login("operator"))
    return client


@pytest.fixture
def agent_beliefs() -> Channel:
    """Three owners' diet:milk asserted by support-agent (agent_own, κ 0.8)."""
    agent = channel("support-agent", "agent_own")
    for owner in ("alice", "bob", "carol"):
        believe(owner, "diet:milk", "oat milk", via=agent)
    return agent


def ceiling(name: str) -> float:
    return ProvenanceTier.objects.get(name=name).ceiling


def tier_row(html: str, name: str) -> str:
    return html.split(f'<tr id="tier-{name}">', 1)[1].split("</tr>", 1)[0]


def channel_row(html: str, name: str) -> str:
    return html.split(f'<tr id="channel-{name}">', 1)[1].split("</tr>", 1)[0]


def latest_change() -> ProvenanceChange:
    return ProvenanceChange.objects.order_by("-id").first()


# --- Tiers -----------------------------------------------------------------------------------


def test_it_lists_the_tiers_with_ceilings_descriptions_channels_and_the_cost_of_a_change(
    operator, agent_beliefs
):
    html = operator.get(PAGE).content.decode()
    assert "<h1>Provenance</h1>" in html
    names = re.findall(r'<tr id="tier-([a-z_]+)">', html)
    assert names == list(ProvenanceTier.objects.order_by("-ceiling", "name").values_list("name", flat=True))
    row = tier_row(html, "agent_own")
    assert '<span class="kappa">0.8</span>' in row and "This agent&#x27;s own reasoning or observation" in row
    assert "support-agent" in row
    assert '<input type="hidden" name="tier" value="agent_own">' in row
    assert 'name="ceiling" step="any" min="0" max="1" value="0.8"' in row
    assert "A change rebuilds <strong>3</strong> beliefs." in row and ">Save</button>" in row
    # Saving a changed ceiling there rebuilds beliefs: beside the unchanged value Save is plain;
    # the page's script makes it look dangerous and ask first, naming how many, once it differs.
    assert (
        'class="small"' in row
        and "danger" not in row
        and 'data-saved="0.8"' in row
        and 'data-rebuilds="Set a new ceiling for' in row
        and "It rebuilds 3 beliefs" in row
    )
    assert "A change rebuilds no belief." in tier_row(html, "tool_output")
    assert "data-confirm" not in tier_row(html, "tool_output")
    assert "at or below the pivot: cannot move beliefs" in tier_row(html, "web_fetch")


def test_the_count_shown_before_saving_is_what_the_rebuild_then_covers(agent_beliefs):
    """tier_rebuild_counts spells tier_update's channel rule in SQL: held together here."""
    web, tool = channel("web-reader", "web_fetch"), channel("tool-runner", "tool_output")
    believe("dave", "city", "Lyon", via=web)
    # Relayed under web_fetch as taint: a web_fetch change rebuilds what tool-runner touched.
    believe("erin", "city", "Nice", via=tool, taint_tier="web_fetch")
    believe("erin", "job", "baker", via=tool)
    believe("alice", "city", "Paris", via=channel("owner-app", "user_direct"))
    counts = tier_rebuild_counts()
    assert counts["agent_own"] == 3 and counts["web_fetch"] == 3 and counts["tool_output"] == 2
    for tier in ProvenanceTier.objects.all():
        _, run = tier_update(name=tier.name, ceiling=tier.ceiling / 2)
        assert run is not None and run.total == counts.get(tier.name, 0), tier.name
    assert channel_belief_counts() == {"support-agent": 3, "web-reader": 1, "tool-runner": 2, "owner-app": 1}


def test_saving_a_ceiling_applies_it_records_a_rebuild_run_and_who_made_the_change(operator, agent_beliefs):
    response = operator.post("/provenance/tiers/", {"tier": "agent_own", "ceiling": "0.45"})
    assert response.status_code == 302 and response.url == PAGE
    assert ceiling("agent_own") == 0.45
    run = JobRun.objects.get()
    assert (run.name, run.trigger, run.status, run.total) == ("rebuild_beliefs", "tier_change", "queued", 3)
    change = latest_change()
    assert (change.actor, change.action, change.subject) == ("otto", "tier_change", "agent_own")
    assert change.detail == "ceiling 0.8 → 0.45; 3 beliefs to rebuild"
    assert change.rebuild_run_id == run.pk and change.at <= timezone.now()
    html = operator.get(PAGE).content.decode()
    assert "Tier agent_own now has ceiling 0.45. Rebuilding the 3 beliefs it touches" in html
    row = tier_row(html, "agent_own")
    assert f'hx-get="/provenance/rebuilds/{run.pk}/" hx-trigger="every 1s"' in row
    assert '<span class="status queued">queued</span>' in row and "0/3" in row
    history = html.split('<section id="changes"', 1)[1]
    assert "otto" in history and "tier changed <strong>agent_own</strong>" in history
    assert "ceiling 0.8 → 0.45; 3 beliefs to rebuild" in history


def test_saving_with_htmx_answers_the_page_body_with_the_rebuild_polling(operator, agent_beliefs):
    response = operator.post(
        "/provenance/tiers/", {"tier": "agent_own", "ceiling": "0.9"}, headers={"HX-Request": "true"}
    )
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<div id="provenance-body">')
    assert 'role="status">Tier agent_own now has ceiling 0.9.' in html
    assert 'hx-trigger="every 1s"' in tier_row(html, "agent_own")


def test_the_progress_fragment_polls_until_the_run_ends_then_stops(operator, agent_beliefs):
    _, run = tier_update(name="agent_own", ceiling=0.45)
    path = reverse("beliefs:rebuild-progress", args=[run.pk])
    queued = operator.get(path, headers={"HX-Request": "true"}).content.decode()
    assert 'hx-trigger="every 1s"' in queued and "queued" in queued and "0/3" in queued
    job_execute(run.pk)
    done = operator.get(path, headers={"HX-Request": "true"}).content.decode()
    assert "hx-trigger" not in done
    assert '<span class="status succeeded">succeeded</span>' in done and "3/3" in done
    assert operator.get(reverse("beliefs:rebuild-progress", args=[JobRun().pk])).status_code == 404


def test_a_run_reported_lost_stops_polling_too(operator, agent_beliefs):
    _, run = tier_update(name="agent_own", ceiling=0.45)
    long_ago = timezone.now() - timedelta(hours=1)
    JobRun.objects.filter(pk=run.pk).update(status="running", started_at=long_ago, heartbeat_at=long_ago)
    html = operator.get(reverse("beliefs:rebuild-progress", args=[run.pk])).content.decode()
    assert '<span class="status lost">lost</span>' in html and "hx-trigger" not in html


@pytest.mark.parametrize("bad", ["0", "1", "1.5", "-0.2", "abc", "", "nan", "inf"])
def test_a_ceiling_outside_0_and_1_is_refused_beside_its_field(operator, agent_beliefs, bad):
    response = operator.post("/provenance/tiers/", {"tier": "agent_own", "ceiling": bad})
    assert response.status_code == 200
    row = tier_row(response.content.decode(), "agent_own")
    assert "A ceiling lies strictly between 0 and 1, e.g. 0.65." in row and 'aria-invalid="true"' in row
    assert ceiling("agent_own") == 0.8
    assert not JobRun.objects.exists() and not ProvenanceChange.objects.filter(action="tier_change").exists()


def test_an_unknown_tier_is_refused(operator):
    response = operator.post("/provenance/tiers/", {"tier": "psychic", "ceiling": "0.5"})
    assert response.status_code == 200 and "there is no tier &#x27;psychic&#x27;" in response.content.decode()


def test_saving_the_same_ceiling_changes_nothing_and_records_nothing(operator, agent_beliefs):
    response = operator.post("/provenance/tiers/", {"tier": "agent_own", "ceiling": "0.8"}, follow=True)
    assert "Tier agent_own already had ceiling 0.8: nothing changed." in response.content.decode()
    assert not JobRun.objects.exists() and not ProvenanceChange.objects.filter(action="tier_change").exists()


# --- Channels --------------------------------------------------------------------------------


def test_channels_are_listed_with_tier_keys_and_beliefs(operator, agent_beliefs):
    api_key_create(name="live", channel_name="support-agent")
    api_key_revoke(key=api_key_create(name="old", channel_name="support-agent")[0])
    row = channel_row(operator.get(PAGE).content.decode(), "support-agent")
    assert 'agent_own <span class="muted">(0.8)</span>' in row
    # Said in words, not as an unexplained "1 (2)".
    assert (
        '<td data-label="API keys" class="num">1 live <span class="muted small">+ 1 revoked</span></td>'
        in row
    )
    assert (
        '<td data-label="Beliefs" class="num">3</td>' in row and "Rebuilds <strong>3</strong> beliefs." in row
    )
    assert '<option value="agent_own" selected>' in row and ">Rebind</button>" in row


def test_creating_a_channel_binds_it_to_its_tier_and_records_who(operator):
    response = operator.post(
        "/provenance/channels/", {"name": "notes-app", "tier": "user_direct", "description": XSS}
    )
    assert response.status_code == 302
    created = Channel.objects.get(name="notes-app")
    assert (created.tier.name, created.description) == ("user_direct", XSS)
    change = latest_change()
    assert (change.actor, change.action, change.subject, change.detail) == (
        "otto", "channel_create", "notes-app", "on tier user_direct",
    )  # fmt: skip
    html = operator.get(PAGE).content.decode()
    assert "Channel notes-app created on tier user_direct." in html
    assert XSS not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in channel_row(html, "notes-app")


@pytest.mark.parametrize(
    ("form", "error"),
    [
        ({"name": "support-agent", "tier": "untrusted"}, "There is a channel support-agent already"),
        ({"name": "two words", "tier": "untrusted"}, "A channel name is letters, digits, _ and -"),
        ({"name": "", "tier": "untrusted"}, "Name the channel"),
        ({"name": "fine", "tier": "psychic"}, "Select a valid choice"),
    ],
)
def test_a_bad_channel_is_refused_in_the_form(operator, agent_beliefs, form, error):
    response = operator.post("/provenance/channels/", form, headers={"HX-Request": "true"})
    assert response.status_code == 200 and error in response.content.decode()
    assert Channel.objects.filter(name=form["name"]).count() == (1 if form["name"] == "support-agent" else 0)


def test_rebinding_a_channel_rebuilds_what_it_touched_and_records_who(operator, agent_beliefs):
    response = operator.post(
        "/provenance/channels/rebind/", {"channel": "support-agent", "tier": "web_fetch"}
    )
    assert response.status_code == 302
    assert Channel.objects.get(name="support-agent").tier.name == "web_fetch"
    run = JobRun.objects.get()
    assert (run.trigger, run.total, run.params) == ("channel_change", 3, {"channels": ["support-agent"]})
    change = latest_change()
    assert (change.actor, change.action, change.detail, change.rebuild_run_id) == (
        "otto", "channel_change", "tier agent_own → web_fetch; 3 beliefs to rebuild", run.pk,
    )  # fmt: skip
    job_execute(run.pk)
    html = operator.get(PAGE).content.decode()
    row = channel_row(html, "support-agent")
    assert '<span class="status succeeded">succeeded</span>' in row and "hx-trigger" not in row


# --- API keys --------------------------------------------------------------------------------


def create_key(client, **fields):
    form = {"name": "support bot", "channel": "support-agent", "perm": ["read"], "user_prefix": "", **fields}
    return client.post("/provenance/keys/", form)


def secret_of(html: str) -> str:
    (secret,) = re.findall(r'<code id="api-key-secret">([^<]*)</code>', html)
    return secret


@pytest.mark.parametrize("htmx", [False, True])
def test_a_new_key_shows_its_secret_once_and_it_authenticates(client, operator, agent_beliefs, htmx):
    headers = {"HX-Request": "true"} if htmx else {}
    response = operator.post(
        "/provenance/keys/",
        {
            "name": "support bot",
            "channel": "support-agent",
            "perm": ["read", "write"],
            "user_prefix": "tenant-a:",
        },
        headers=headers,
    )
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    html = response.content.decode()
    secret = secret_of(html)
    assert secret.startswith("atl_") and len(secret) > 30
    assert "will not be shown again" in html and 'data-copy="api-key-secret"' in html
    assert 'hx-history="false"' in html
    key = ApiKey.objects.get()
    assert (key.name, key.channel.name, key.permissions, key.user_prefix) == (
        "support bot", "support-agent", ["read", "write"], "tenant-a:",
    )  # fmt: skip
    assert ApiClient(secret).get("/tiers").status == 200
    # Never kept: not in the session, a cookie, a message or the next page.
    assert secret not in str(dict(operator.session.items()))
    assert all(secret not in morsel.value for morsel in response.cookies.values())
    again = operator.get(PAGE).content.decode()
    assert secret not in again and 'id="api-key-secret"' not in again
    assert f"<code>{key.display_prefix}…</code>" in again
    change = latest_change()
    assert (change.actor, change.action, change.subject) == ("otto", "api_key_create", "support bot")
    assert secret not in change.detail and key.display_prefix in change.detail


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"perm": []}, "Choose at least one permission."),
        ({"perm": ["fly"]}, "Select a valid choice"),
        ({"name": ""}, "Name the key after what uses it."),
        ({"channel": ""}, "Choose the channel the key writes on."),
        ({"channel": "no-such-channel"}, "Select a valid choice"),
    ],
)
def test_a_bad_key_form_is_refused_and_nothing_is_created(operator, agent_beliefs, fields, error):
    response = create_key(operator, **fields)
    html = response.content.decode()
    assert response.status_code == 200 and error in html and 'id="api-key-secret"' not in html
    assert not ApiKey.objects.exists() and not Channel.objects.filter(name="no-such-channel").exists()


def test_keys_are_listed_with_their_facts_and_a_revoke_button_only_while_live(operator, agent_beliefs):
    live, secret = api_key_create(
        name=XSS, channel_name="support-agent", permissions=["read", "admin"], user_prefix="t:"
    )
    ApiClient(secret).get("/tiers")
    gone, _ = api_key_create(name="retired", channel_name="support-agent")
    api_key_revoke(key=gone)
    html = operator.get(PAGE).content.decode()
    row = html.split(f'<tr id="key-{live.pk}">', 1)[1].split("</tr>", 1)[0]
    assert XSS not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in row
    # The question Revoke asks (static/js/confirm.js reads it) holds the name as escaped text.
    assert ">Revoke</button>" in row and "onclick" not in row
    assert 'data-confirm="Revoke the API key “&lt;script&gt;alert(1)&lt;/script&gt;”?' in row
    assert '<span class="badge perm">read</span>' in row and '<span class="badge perm">admin</span>' in row
    assert "<code>t:</code>" in row and "support-agent" in row and "agent_own" in row
    assert row.count("<time") == 2 and "not revoked" in row  # created, last used
    retired = html.split(f'<tr id="key-{gone.pk}"', 1)[1].split("</tr>", 1)[0]
    assert "Revoke</button>" not in retired and "revoked</span>" in retired and "never" in retired


def test_revoking_a_key_makes_it_answer_401_and_records_who(operator, agent_beliefs):
    key, secret = api_key_create(name="support bot", channel_name="support-agent")
    assert ApiClient(secret).get("/tiers").status == 200
    response = operator.post(f"/provenance/keys/{key.pk}/revoke/", follow=True)
    assert "Revoked API key support bot" in response.content.decode()
    assert ApiClient(secret).get("/tiers").status == 401
    operator.post(f"/provenance/keys/{key.pk}/revoke/")
    revokes = ProvenanceChange.objects.filter(action="api_key_revoke")
    assert [(c.actor, c.subject) for c in revokes] == [("otto", "support bot")]
    assert operator.post("/provenance/keys/999999/revoke/").status_code == 404


# --- History ---------------------------------------------------------------------------------


def test_every_change_is_recorded_with_who_made_it_wherever_it_was_made(admin_client, agent_beliefs):
    operator_key = make_client(channel="ops-console", tier="untrusted", perms=("read", "admin"))
    assert operator_key.call("PUT", "/tiers/tool_output", {"ceiling": 0.6}).status == 200
    assert operator_key.post("/channels", {"name": "api-made", "tier": "document"}).status == 201
    admin_client.post(
        reverse("admin:access_provenancetier_change", args=[ProvenanceTier.objects.get(name="document").pk]),
        {"ceiling": 0.5, "description": "a document the owner supplied"},
    )
    call_command(
        "create_api_key",
        "--name",
        "cli",
        "--channel",
        "cli-bot",
        "--tier",
        "agent_own",
        stdout=StringIO(),
        stderr=StringIO(),
    )
    made = [(c.actor, c.action, c.subject) for c in ProvenanceChange.objects.order_by("id")]
    assert made[-6:] == [
        ("system", "api_key_create", "test ops-console"),
        ("api key test ops-console", "tier_change", "tool_output"),
        ("api key test ops-console", "channel_create", "api-made"),
        ("admin", "tier_change", "document"),
        ("command", "channel_create", "cli-bot"),
        ("command", "api_key_create", "cli"),
    ]


def test_the_history_is_newest_first_and_paged(operator):
    for n in range(20):
        channel(f"bot-{n:02}", "untrusted")
    first = operator.get(PAGE).content.decode().split('<section id="changes"', 1)[1]
    assert first.index("bot-19") < first.index("bot-05") and "bot-04" not in first
    assert "1–15 of 20" in first and 'href="/provenance/?changes=2"' in first
    second = operator.get(PAGE + "?changes=2", headers={"HX-Request": "true", "HX-Target": "changes"})
    text = second.content.decode()
    assert text.lstrip().startswith('<section id="changes"') and "bot-04" in text and "bot-05" not in text


def test_a_recorded_change_cannot_be_rewritten():
    channel("bot", "untrusted")
    with pytest.raises(DatabaseError), transaction.atomic():
        ProvenanceChange.objects.update(actor="somebody else")


def test_an_empty_history_says_what_fills_it(operator):
    ProvenanceChange.objects.all().delete()
    assert "No changes yet." in operator.get(PAGE).content.decode()


def test_the_page_costs_a_fixed_number_of_queries_however_much_there_is(
    operator, django_assert_max_num_queries
):
    for n in range(20):
        ProvenanceTier.objects.create(name=f"tier-{n:02}", ceiling=0.05 + n * 0.04, description=XSS)
    for n in range(60):
        believe(f"owner-{n}", "city", "Lyon", via=channel(f"bot-{n:02}", f"tier-{n % 20:02}"))
    for n in range(80):
        key, _ = api_key_create(name=f"key {n}", channel_name=f"bot-{n % 60:02}")
        if n % 3 == 0:
            api_key_revoke(key=key)
    for n in range(20):
        tier_update(name=f"tier-{n:02}", ceiling=0.06 + n * 0.04)
    operator.get(PAGE)
    with django_assert_max_num_queries(12):
        html = operator.get(PAGE + "?keys=2&changes=3").content.decode()
    assert html.count('<tr id="tier-') == 28 and html.count('<tr id="channel-') == 61
    assert html.count('<tr id="key-') == 25 and XSS not in html
