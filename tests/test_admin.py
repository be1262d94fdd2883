"""The admin: tiers, channels and keys change through the services; the store is read-only."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from atlaso_site.access.models import PERMISSIONS, ApiKey, Channel, ProvenanceTier
from atlaso_site.job_runs.models import JobRun
from beliefs.services import belief_confirm, beliefs_verify, channel_bind
from deposits.models import Deposit
from tests.beliefs.helpers import OLD, observe, verdict
from tests.conftest import ApiClient, make_client

READ_ONLY_LISTS = (
    "beliefs_belief",
    "beliefs_beliefrevision",
    "beliefs_calibrationoutcome",
    "jobs_jobrun",
    "deposits_scopebag",
    "deposits_deposit",
    "deposits_contradiction",
)


def tier(name: str) -> ProvenanceTier:
    return ProvenanceTier.objects.get(name=name)


def add_key(admin_client: Client, **fields: Any) -> Any:
    """POST the admin's add-key form: by default a read/write key on a new channel ci-bot."""
    form = {"name": "ci", "new_channel": "ci-bot", "permissions": ["read", "write"], "user_prefix": ""}
    return admin_client.post(reverse("admin:access_apikey_add"), {**form, **fields})


def form_errors(response: Any) -> list[str]:
    form = response.context["adminform"].form
    return [str(error) for errors in form.errors.values() for error in errors]


def messages_of(response: Any) -> list[str]:
    return [str(message) for message in response.context["messages"]]


# --- API keys ----------------------------------------------------------------------------------


def test_adding_a_key_shows_a_secret_that_authenticates(admin_client):
    response = add_key(admin_client)
    assert response.status_code == 200
    secret = response.context["secret"]
    assert secret in response.content.decode()
    key = ApiKey.objects.select_related("channel__tier").get()
    assert key.secret_hash and secret not in key.secret_hash
    assert (key.channel.name, key.channel.tier.name) == ("ci-bot", "untrusted")
    assert key.permissions == ["read", "write"]
    assert ApiClient(secret).get("/tiers").status == 200


def test_two_keys_added_in_a_row_both_work(admin_client):
    first = add_key(admin_client, new_channel="ci-bot", tier=tier("agent_own").pk)
    channel = Channel.objects.get(name="ci-bot")
    second = add_key(admin_client, name="ci 2", new_channel="", channel=channel.pk)
    secrets = [first.context["secret"], second.context["secret"]]
    assert secrets[0] != secrets[1]
    assert ApiKey.objects.filter(channel=channel).count() == 2
    assert [ApiClient(secret).get("/tiers").status for secret in secrets] == [200, 200]
    assert channel.tier.name == "agent_own"


def test_the_form_offers_exactly_the_four_permissions_and_refuses_any_other(admin_client):
    form = admin_client.get(reverse("admin:access_apikey_add")).context["adminform"].form
    offered = form.fields["permissions"].choices
    assert [value for value, _ in offered] == list(PERMISSIONS) == ["read", "write", "erase", "admin"]
    response = add_key(admin_client, permissions=["read", "fly"])
    assert response.status_code == 200
    assert "Select a valid choice. fly is not one of the available choices." in form_errors(response)
    assert not ApiKey.objects.exists()


def test_a_key_needs_one_channel_existing_or_new(admin_client):
    existing = channel_bind(name="agent-a", tier_name="agent_own")[0]
    for fields in ({"new_channel": ""}, {"channel": existing.pk}):
        response = add_key(admin_client, **fields)
        assert form_errors(response) == ["Choose an existing channel or name a new one, not both."]
    assert not ApiKey.objects.exists()


def test_the_services_refusal_shows_as_a_form_error(admin_client):
    existing = channel_bind(name="agent-a", tier_name="agent_own")[0]
    response = add_key(admin_client, new_channel="", channel=existing.pk, tier=tier("web_fetch").pk)
    assert response.status_code == 200
    [error] = form_errors(response)
    assert "is bound to tier 'agent_own', not 'web_fetch'" in error
    assert not ApiKey.objects.exists()


def test_a_key_is_shown_without_its_hash_and_cannot_be_edited_or_deleted(admin_client):
    response = add_key(admin_client)
    key = ApiKey.objects.get()
    change = reverse("admin:access_apikey_change", args=[key.pk])
    page = admin_client.get(change)
    assert page.status_code == 200 and key.display_prefix in page.content.decode()
    assert key.secret_hash not in page.content.decode()
    assert admin_client.post(change, {"name": "renamed"}).status_code == 403
    assert admin_client.get(reverse("admin:access_apikey_delete", args=[key.pk])).status_code == 403
    key.refresh_from_db()
    assert key.name == "ci"
    assert ApiClient(response.context["secret"]).get("/tiers").status == 200


def test_revoking_a_key_in_the_admin_locks_it_out(admin_client):
    secret = add_key(admin_client).context["secret"]
    key = ApiKey.objects.get()
    response = admin_client.post(
        reverse("admin:access_apikey_changelist"),
        {"action": "revoke", "_selected_action": [key.pk]},
        follow=True,
    )
    assert "Revoked 1 API key(s): they answer 401 from now on." in messages_of(response)
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert ApiClient(secret).get("/tiers").status == 401


# --- Channels and tiers ------------------------------------------------------------------------


def test_rebinding_a_channel_schedules_a_rebuild_that_applies_the_new_tier(
    admin_client, settings, django_capture_on_commit_callbacks
):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    agent = make_client(channel="agent-a", tier="agent_own")
    observe(agent, OLD)
    assert verdict(agent)["fact"] == OLD
    channel = Channel.objects.get(name="agent-a")
    with django_capture_on_commit_callbacks(execute=True) as sent:
        response = admin_client.post(
            reverse("admin:access_channel_change", args=[channel.pk]),
            {"tier": tier("web_fetch").pk, "description": "a scraper after all"},
            follow=True,
        )
    assert response.status_code == 200 and len(sent) == 1
    job = JobRun.objects.get()
    assert (job.name, job.trigger, job.status) == ("rebuild_beliefs", "channel_change", "succeeded")
    assert (job.params, job.total, job.done) == ({"channels": ["agent-a"]}, 1, 1)
    assert any(f"{job.pk}</a>) was queued" in message for message in messages_of(response))
    channel.refresh_from_db()
    assert (channel.tier.name, channel.description) == ("web_fetch", "a scraper after all")
    # web_fetch sits below the pivot: what the channel said no longer makes a fact.
    assert verdict(agent)["fact"] is None
    assert beliefs_verify()["mismatches"] == []


def test_adding_a_channel_creates_it_on_its_tier_and_an_existing_name_is_refused(admin_client):
    add = reverse("admin:access_channel_add")
    created = admin_client.post(add, {"name": "notes-app", "tier": tier("user_direct").pk, "description": ""})
    assert created.status_code == 302
    assert Channel.objects.get(name="notes-app").tier.name == "user_direct"
    again = admin_client.post(add, {"name": "notes-app", "tier": tier("web_fetch").pk, "description": ""})
    assert form_errors(again) == ["Channel with this Name already exists."]
    assert Channel.objects.get(name="notes-app").tier.name == "user_direct"
    assert not JobRun.objects.exists()


def test_changing_a_tier_ceiling_schedules_a_rebuild_and_a_description_alone_does_not(admin_client, api):
    observe(api, OLD)
    change = reverse("admin:access_provenancetier_change", args=[tier("agent_own").pk])
    described = admin_client.post(change, {"ceiling": 0.8, "description": "our own agents"}, follow=True)
    assert described.status_code == 200 and not JobRun.objects.exists()
    assert tier("agent_own").description == "our own agents"
    lowered = admin_client.post(change, {"ceiling": 0.4, "description": "our own agents"}, follow=True)
    job = JobRun.objects.get()
    assert (job.trigger, job.status, job.params, job.total) == (
        "tier_change",
        "queued",
        {"channels": ["agent-a"]},
        1,
    )
    assert any(f"{job.pk}</a>) was queued" in message for message in messages_of(lowered))
    assert tier("agent_own").ceiling == 0.4


def test_a_ceiling_outside_0_and_1_is_refused_in_the_services_words(admin_client):
    change = reverse("admin:access_provenancetier_change", args=[tier("agent_own").pk])
    response = admin_client.post(change, {"ceiling": 1.0, "description": ""})
    assert form_errors(response) == ["a ceiling must lie strictly between 0 and 1"]
    assert tier("agent_own").ceiling == 0.8


def test_tiers_cannot_be_added_or_deleted_nor_channels_deleted(admin_client):
    channel = channel_bind(name="agent-a", tier_name="agent_own")[0]
    assert admin_client.get(reverse("admin:access_provenancetier_add")).status_code == 403
    delete_tier = reverse("admin:access_provenancetier_delete", args=[tier("agent_own").pk])
    assert admin_client.post(delete_tier, {"post": "yes"}).status_code == 403
    delete_channel = reverse("admin:access_channel_delete", args=[channel.pk])
    assert admin_client.post(delete_channel, {"post": "yes"}).status_code == 403
    assert Channel.objects.filter(pk=channel.pk).exists()


# --- The store and the belief tables: read-only ------------------------------------------------


def test_a_deposits_change_page_is_read_only_and_its_add_page_is_forbidden(admin_client, api):
    answer = api.post("/users/alice/deposits", {"content": "likes green tea"})
    assert answer.status == 201, answer.body
    deposit_id = answer.body["deposit"]["id"]
    change = reverse("admin:deposits_deposit_change", args=[deposit_id])
    page = admin_client.get(change)
    assert page.status_code == 200 and "likes green tea" in page.content.decode()
    assert page.context["has_change_permission"] is False
    assert 'name="_save"' not in page.content.decode()
    changed = admin_client.post(
        change, {"content": "likes coffee", "user_id": "alice", "polarity": "negative"}
    )
    assert changed.status_code == 403
    deposit = Deposit.objects.get(pk=deposit_id)
    assert (deposit.content, deposit.polarity) == ("likes green tea", "open")
    assert admin_client.get(reverse("admin:deposits_deposit_add")).status_code == 403
    delete = reverse("admin:deposits_deposit_delete", args=[deposit_id])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert Deposit.objects.filter(pk=deposit_id).exists()


def fill_every_table(round_: int) -> None:
    """Rows in every table the admin lists, on new channels and owners each round."""
    agent = make_client(channel=f"agent-{round_}", tier="agent_own")
    make_client(channel=f"scraper-{round_}", tier="web_fetch")
    for owner in (f"alice-{round_}", f"bob-{round_}"):
        claim = {
            "content": "Threshold 0.7 works",
            "polarity": "positive",
            "scope": {"model": "gpt-5", "env": "prod"},
        }
        old = agent.post(f"/users/{owner}/deposits", {**claim, "evidence_grade": "observed"})
        assert old.status == 201, old.body
        fix = {
            **claim,
            "content": "Threshold 0.7 over-flags",
            "polarity": "negative",
            "evidence_grade": "observed",
            "contradicts": [old.body["deposit"]["id"]],
            "reason": "re-measured",
        }
        assert agent.post(f"/users/{owner}/contradict", fix).status == 201
        observe(agent, OLD, user=owner)
        belief_confirm(user_id=owner, key="coffee_ratio", value=OLD)
    channel_bind(name=f"agent-{round_}", tier_name="user_direct")


def list_queries(admin_client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert admin_client.get(url).status_code == 200
    return len(queries)


def test_every_list_answers_in_as_many_queries_however_many_rows_it_shows(admin_client):
    urls = [
        reverse(f"admin:{name}_changelist")
        for name in ("access_provenancetier", "access_channel", "access_apikey", *READ_ONLY_LISTS)
    ]
    urls.append(reverse("admin:deposits_deposit_changelist") + "?q=alice-1&polarity=negative")
    fill_every_table(1)
    few = {url: list_queries(admin_client, url) for url in urls}
    for round_ in (2, 3, 4):
        fill_every_table(round_)
    assert {url: list_queries(admin_client, url) for url in urls} == few


@pytest.mark.parametrize("name", READ_ONLY_LISTS)
def test_the_store_and_belief_tables_offer_no_add_change_or_delete(admin_client, name):
    fill_every_table(1)
    page = admin_client.get(reverse(f"admin:{name}_changelist"))
    assert page.status_code == 200
    assert page.context["cl"].result_count > 0
    assert page.context["has_add_permission"] is False
    assert page.context["action_form"] is None  # not even "delete selected"
    assert admin_client.get(reverse(f"admin:{name}_add")).status_code == 403
    row = page.context["cl"].result_list[0]
    assert admin_client.post(reverse(f"admin:{name}_change", args=[row.pk]), {}).status_code == 403
    assert (
        admin_client.post(reverse(f"admin:{name}_delete", args=[row.pk]), {"post": "yes"}).status_code == 403
    )


def test_searching_a_list_by_user_id_finds_only_that_owner(admin_client):
    fill_every_table(1)
    page = admin_client.get(reverse("admin:deposits_deposit_changelist") + "?q=alice-1")
    users = {deposit.user_id for deposit in page.context["cl"].result_list}
    assert users == {"alice-1"} and page.context["cl"].result_count == 2
