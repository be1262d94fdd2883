"""Reading beliefs: the owner's list, one verdict, its revision log, the tier table, confinement."""

from __future__ import annotations

import pytest

from beliefs.models import BeliefRevision
from tests.beliefs.helpers import KEY, NEW, OLD, claimed, observe, pick, verdict
from tests.conftest import ApiClient, make_client

VERDICT_KEYS = {
    "kind",
    "belief_key",
    "fact",
    "probability",
    "distribution",
    "unknown_mass",
    "superseded",
    "contested",
    "inert",
    "entropy_bits",
    "is_uncertain",
    "observation_count",
    "effective_count",
    "updated_at",
}
REVISION_KEYS = {
    "kind",
    "belief_key",
    "value",
    "observed_at",
    "sequence",
    "channel",
    "tier",
    "ceiling",
    "taint_tier",
    "content_confidence",
    "reliability",
    "likelihood_ratio",
    "floor",
    "lifted",
    "effective",
    "prior",
    "posterior",
    "shift",
    "deposit_id",
    "source_id",
    "verdict",
}


@pytest.fixture
def three_beliefs(api, owner):
    """diet:milk asserted firmly, coffee_ratio hedged (uncertain), tea only heard of (no fact)."""
    observe(owner, "oat", key="diet:milk", content_confidence=0.95)
    observe(api, NEW, content_confidence=0.2)
    observe(make_client(channel="gossip", tier="web_fetch"), "green", key="tea")


def test_the_list_pages_an_owners_beliefs_by_key_with_the_total(api, three_beliefs):
    first = api.get("/users/alice/beliefs?limit=2")
    assert first.status == 200
    assert first.body["kind"] == "belief_page"
    assert first.body["total"] == 3
    assert [item["belief_key"] for item in first.body["items"]] == [KEY, "diet:milk"]
    assert all(set(item) == VERDICT_KEYS for item in first.body["items"])
    rest = api.get("/users/alice/beliefs?limit=2&offset=2")
    assert [item["belief_key"] for item in rest.body["items"]] == ["tea"]
    assert rest.body["total"] == 3


def test_uncertain_true_lists_the_beliefs_to_ask_about_and_false_the_rest(api, three_beliefs):
    uncertain = api.get("/users/alice/beliefs?uncertain=true").body
    assert [item["belief_key"] for item in uncertain["items"]] == [KEY, "tea"]
    assert uncertain["total"] == 2
    assert all(item["is_uncertain"] for item in uncertain["items"])
    sure = api.get("/users/alice/beliefs?uncertain=false").body
    assert [(item["belief_key"], item["fact"]) for item in sure["items"]] == [("diet:milk", "oat")]
    assert sure["total"] == 1


def test_the_list_holds_only_this_owners_beliefs(api, three_beliefs):
    observe(api, OLD, user="bob")
    assert api.get("/users/bob/beliefs").body["total"] == 1
    assert api.get("/users/carol/beliefs").body == {"kind": "belief_page", "items": [], "total": 0}


@pytest.mark.parametrize("query", ["limit=0", "limit=201", "offset=-1", "uncertain=maybe"])
def test_a_bad_page_query_is_422(api, query):
    answer = api.get(f"/users/alice/beliefs?{query}")
    assert answer.status == 422
    assert answer.body["error"]["field"] == query.split("=")[0]


def test_one_belief_answers_its_whole_verdict(api, owner):
    observe(api, OLD)
    observe(owner, NEW, content_confidence=0.9)
    body = verdict(api)
    assert set(body) == VERDICT_KEYS
    assert body["kind"] == "belief_verdict"
    assert (body["belief_key"], body["fact"], body["superseded"]) == (KEY, NEW, [OLD])
    assert body["probability"] == pytest.approx(0.9)
    assert list(body["distribution"]) == [NEW, OLD]
    assert sum(body["distribution"].values()) + body["unknown_mass"] == pytest.approx(1.0)
    assert (body["observation_count"], body["effective_count"], body["is_uncertain"]) == (2, 2, False)


def test_an_unknown_belief_is_404_in_the_envelope(api):
    observe(api, OLD)
    unknown = [
        "/users/alice/beliefs/tea",
        "/users/bob/beliefs/coffee_ratio",
        "/users/alice/beliefs/tea/revisions",
    ]
    for path in unknown:
        answer = api.get(path)
        assert answer.status == 404, path
        assert answer.body["kind"] == "error"
        assert answer.body["error"]["code"] == "not_found"


def test_revisions_come_in_claim_time_order_with_every_field_and_the_verdict_after_each(api, web):
    # Arrival order: second, first, third; claim-time order: first, second, third.
    second = observe(api, NEW, observed_at=claimed(20), content_confidence=0.9)
    first = observe(api, OLD, observed_at=claimed(10), source_id="chat-1")
    third = observe(web, OLD, observed_at=claimed(30), taint_tier="document", content_confidence=1.0)
    page = api.get(f"/users/alice/beliefs/{KEY}/revisions")
    assert page.status == 200
    body = page.body
    assert (body["kind"], body["total"], body["limit"], body["offset"]) == ("revision_page", 3, 50, 0)
    items = body["items"]
    assert [item["sequence"] for item in items] == [first["sequence"], second["sequence"], third["sequence"]]
    assert all(set(item) == REVISION_KEYS for item in items)
    assert all(item["kind"] == "belief_revision" for item in items)
    assert items[0]["source_id"] == "chat-1"
    assert items[0]["verdict"]["fact"] == OLD
    assert items[1]["verdict"]["fact"] == NEW
    assert items[1]["verdict"]["superseded"] == [OLD]
    web_row = items[2]
    assert pick(web_row, "channel", "tier", "ceiling", "taint_tier", "content_confidence", "reliability") == {
        "channel": "web-reader",
        "tier": "web_fetch",
        "ceiling": 0.3,
        "taint_tier": "document",
        "content_confidence": 1.0,
        "reliability": 0.3,
    }
    assert pick(web_row, "likelihood_ratio", "floor", "lifted", "effective", "shift", "deposit_id") == {
        "likelihood_ratio": 1.0,
        "floor": 0.0,
        "lifted": False,
        "effective": False,
        "shift": 0.0,
        "deposit_id": None,
    }
    assert web_row["prior"] == web_row["posterior"]
    assert web_row["verdict"] == verdict(api)
    # The stored facts are those the observation had when it arrived, out of order or not.
    stored = BeliefRevision.objects.get(pk=second["sequence"])
    assert (items[1]["reliability"], items[1]["prior"], items[1]["posterior"]) == (
        stored.reliability,
        stored.prior,
        stored.posterior,
    )


def test_the_revision_log_pages(api):
    for minutes in range(5):
        observe(api, f"{minutes} oz per tbsp", observed_at=claimed(minutes))
    page = api.get(f"/users/alice/beliefs/{KEY}/revisions?limit=2&offset=2").body
    assert page["total"] == 5
    assert [item["value"] for item in page["items"]] == ["2 oz per tbsp", "3 oz per tbsp"]
    assert page["items"][1]["verdict"]["fact"] == "3 oz per tbsp"


DEFAULT_TIERS = [
    ("user_edit", 0.99),
    ("user_direct", 0.98),
    ("agent_own", 0.8),
    ("tool_output", 0.65),
    ("document", 0.55),
    ("agent_third_party", 0.4),
    ("web_fetch", 0.3),
    ("untrusted", 0.1),
]


def test_tiers_lists_the_eight_defaults_with_ceilings_and_the_channels_bound_to_each(api, web):
    answer = api.get("/tiers")
    assert answer.status == 200
    assert answer.body["kind"] == "tier_list"
    items = answer.body["items"]
    assert [(item["name"], item["ceiling"]) for item in items] == DEFAULT_TIERS
    channels = {item["name"]: item["channels"] for item in items}
    assert channels["user_edit"] == ["human_review"]
    assert channels["agent_own"] == ["agent-a"]
    assert channels["web_fetch"] == ["web-reader"]
    assert channels["untrusted"] == []
    assert all(set(item) == {"name", "ceiling", "description", "channels"} for item in items)
    assert all(item["description"] for item in items)


def test_tiers_need_a_key(db):
    assert make_client().get("/tiers").status == 200
    assert ApiClient(None).get("/tiers").status == 401


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/users/tenant-b:alice/beliefs/coffee_ratio/observations"),
        ("GET", "/users/tenant-b:alice/beliefs"),
        ("GET", "/users/tenant-b:alice/beliefs/coffee_ratio"),
        ("GET", "/users/tenant-b:alice/beliefs/coffee_ratio/revisions"),
        ("GET", "/users/tenant-b:nobody/beliefs/coffee_ratio"),
    ],
)
def test_a_confined_key_gets_403_on_another_tenants_beliefs(db, method, path):
    observe(make_client(channel="tenant-b-app"), OLD, user="tenant-b:alice")
    confined = make_client(channel="tenant-a-app", prefix="tenant-a:")
    answer = confined.call(method, path, {"value": NEW} if method == "POST" else None)
    assert answer.status == 403
    assert answer.body["error"]["code"] == "forbidden"
    assert BeliefRevision.objects.count() == 1
    observe(confined, NEW, user="tenant-a:alice")
    assert verdict(confined, user="tenant-a:alice")["fact"] == NEW


def test_reads_take_a_fixed_number_of_queries_however_long_the_log(api, django_assert_max_num_queries):
    for minutes in range(40):
        observe(api, f"{minutes % 4} oz per tbsp", key=f"k{minutes % 3}", observed_at=claimed(minutes))
    for path in ("/users/alice/beliefs", "/users/alice/beliefs/k0", "/users/alice/beliefs/k0/revisions"):
        with django_assert_max_num_queries(7):
            assert api.get(path).status == 200


def test_a_huge_offset_is_a_422_not_a_server_error(owner):
    answer = owner.get("/users/alice/beliefs?offset=2295059153134651383589371904")
    assert answer.status == 422
    assert answer.body["error"]["field"] == "offset"
