"""Every beliefs page, fragment and action checks access: login first, then the role it needs."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import pytest
from django.test import Client

from atlaso_site.access.models import ApiKey, Channel
from atlaso_site.job_runs.services import job_record
from beliefs.models import CalibrationOutcome, ProvenanceChange
from beliefs.services import api_key_create
from tests.beliefs.dashboard import seed_alice
from tests.cast import make_login

pytestmark = pytest.mark.django_db

BELIEFS = "/owners/alice/beliefs/"
BELIEF = "/owners/alice/beliefs/coffee_ratio/"

# name → (method, path, form); {key} and {run} are filled in by the fixture's objects.
REVIEWER_CALLS = {
    "beliefs": ("get", BELIEFS + "?uncertain=1&page=1", None),
    "belief": ("get", BELIEF + "?page=1", None),
    "confirm": ("post", BELIEF, {"value": "5 oz per tbsp"}),
}
OPERATOR_CALLS = {
    "provenance": ("get", "/provenance/?keys=1&changes=1", None),
    "rebuild progress": ("get", "/provenance/rebuilds/{run}/", None),
    "tier save": ("post", "/provenance/tiers/", {"tier": "agent_own", "ceiling": "0.7"}),
    "create channel": ("post", "/provenance/channels/", {"name": "new-bot", "tier": "untrusted"}),
    "rebind channel": (
        "post",
        "/provenance/channels/rebind/",
        {"channel": "support-agent", "tier": "tool_output"},
    ),
    "create key": (
        "post",
        "/provenance/keys/",
        {"name": "bot", "channel": "support-agent", "perm": ["read"], "user_prefix": ""},
    ),
    "revoke key": ("post", "/provenance/keys/{key}/revoke/", {}),
}
CALLS = {**REVIEWER_CALLS, **OPERATOR_CALLS}


@pytest.fixture
def call() -> Callable[..., object]:
    """Make one of CALLS with a client; the belief, key and run it names exist."""
    seed_alice()
    key, _ = api_key_create(name="agent", channel_name="support-agent")
    run = job_record(name="rebuild_beliefs", trigger="tier_change", params={"channels": []})

    def make(client: Client, name: str, **headers: str):
        method, path, form = CALLS[name]
        path = path.format(key=key.pk, run=run.pk)
        if method == "get":
            return client.get(path, headers=headers)
        return client.post(path, form or {}, headers=headers)

    return make


def nothing_written() -> bool:
    return (
        not CalibrationOutcome.objects.exists()
        and not ProvenanceChange.objects.exclude(action="channel_create")
        .exclude(action="api_key_create")
        .exists()
        and not ApiKey.objects.filter(revoked_at__isnull=False).exists()
        and not Channel.objects.filter(name="new-bot").exists()
        and ApiKey.objects.count() == 1
    )


@pytest.mark.parametrize("name", CALLS)
def test_anonymous_is_sent_to_log_in_and_back(client, call, name):
    response = call(client, name)
    assert response.status_code == 302
    path = response.wsgi_request.get_full_path()
    assert response.url == f"/accounts/login/?next={quote(path, safe='/')}"
    assert nothing_written()


@pytest.mark.parametrize("name", CALLS)
def test_an_anonymous_htmx_request_sends_the_whole_window_to_log_in(client, call, name):
    response = call(client, name, HX_Request="true", HX_Current_URL="http://testserver/provenance/")
    assert response["HX-Redirect"] == "/accounts/login/?next=/provenance/"
    assert nothing_written()


@pytest.mark.parametrize("name", CALLS)
def test_a_login_with_no_role_gets_403(client, call, name):
    client.force_login(make_login("no-role"))
    response = call(client, name)
    assert response.status_code == 403
    assert "This needs the" in response.content.decode()
    assert nothing_written()


@pytest.mark.parametrize("name", OPERATOR_CALLS)
def test_a_reviewer_gets_403_on_provenance_and_on_every_form_on_it(client, call, name):
    client.force_login(make_login("reviewer"))
    response = call(client, name)
    assert response.status_code == 403
    assert "This needs the operator role" in response.content.decode()
    assert nothing_written()


@pytest.mark.parametrize("name", REVIEWER_CALLS)
def test_a_reviewer_reads_beliefs_and_confirms(client, call, name):
    client.force_login(make_login("reviewer"))
    response = call(client, name)
    assert response.status_code == (302 if name == "confirm" else 200)


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize("role", ["operator", "superuser"])
def test_an_operator_or_superuser_may_do_everything(client, call, name, role):
    client.force_login(make_login(role))
    response = call(client, name)
    redirects = {"confirm", "tier save", "create channel", "rebind channel", "revoke key"}
    assert response.status_code == (302 if name in redirects else 200), response.content.decode()[:500]


@pytest.mark.parametrize(
    "name", [name for name, (method, _, _) in OPERATOR_CALLS.items() if method == "post"]
)
def test_the_provenance_forms_take_no_get(client, call, name):
    client.force_login(make_login("operator"))
    _, path, _ = OPERATOR_CALLS[name]
    response = client.get(path.format(key=1, run=""))
    assert response.status_code == 405
