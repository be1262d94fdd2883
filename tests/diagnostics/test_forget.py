"""Forgetting an owner (portability.md, DELETE /users/{user_id}): afterwards every read answers
as for an owner who never wrote, every dashboard page shows nothing of it, a replay of any of its
idempotency keys is 410 `erased`, no table of the database holds its id or a sentence it wrote,
and every other owner is as it was."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.apps import apps
from django.db import connection
from django.utils import timezone

from atlaso_site.job_runs.models import JobRun
from atlaso_site.job_runs.services import job_record
from beliefs.models import Channel
from beliefs.services import belief_confirm, channel_get_or_create, observation_record
from deposits.models import Deposit, RecallLog, ScopeBag
from deposits.selectors.recall import recall
from deposits.services.deposits import recall_record
from deposits.services.review import bag_resolve, claim_bag, conflict_skip
from diagnostics.forget import owner_forget, owner_models
from diagnostics.services import diagnostics_recompute
from tests.cast import make_login
from tests.conftest import ApiClient, make_client
from tests.deposits.recount import assert_bags_match_a_recount
from tests.diagnostics.dashboard import logged_in

pytestmark = pytest.mark.django_db

GONE = "forget-me.ada"
KEPT = "keep-me.bo"
NEVER = "never-wrote"
SCOPE = {"model": "gpt-5", "dataset": "evals", "env": "prod"}


def sentences(owner: str) -> list[str]:
    """What the owner wrote, each sentence its own: the scan looks for every one."""
    return [
        f"{owner} keeps the lighthouse lamp trimmed every evening",
        f"{owner} says the lighthouse lamp was never trimmed",
        f"{owner} corrected it: the lamp is trimmed on Sundays only",
        f"{owner} stores the spare wicks in the cellar",
        f"{owner} once left the harbour gate unlatched",
        f"{owner} prefers oat milk in the morning tea",
    ]


def _claim(content: str, polarity: str, **extra: Any) -> dict[str, Any]:
    return {
        "content": content, "polarity": polarity, "evidence_grade": "verified",
        "artifact_refs": ["s3://runs/9"], "scope": SCOPE, **extra,
    }  # fmt: skip


def memory_of(owner: str, api: ApiClient) -> dict[str, Any]:
    """An owner with something in every table that can hold one: deposits (single, bulk, a
    correction, a retraction, an erasure), a belief with observations (one keyed) and a confirmed
    value, a resolution with a reviewer's claim and skip, a recall, snapshots, a job record."""
    said = sentences(owner)
    keys = {}
    first = api.post(f"/users/{owner}/deposits", _claim(said[0], "positive", idempotency_key=f"{owner}-k1"))
    second = api.post(f"/users/{owner}/deposits", _claim(said[1], "negative", idempotency_key=f"{owner}-k2"))
    assert (first.status, second.status) == (201, 201)
    keys["add"] = (f"{owner}-k1", _claim(said[0], "positive", idempotency_key=f"{owner}-k1"))
    bulk = api.post(
        f"/users/{owner}/deposits/bulk",
        {
            "items": [
                _claim(
                    said[3],
                    "positive",
                    idempotency_key=f"{owner}-b1",
                    belief={"key": "diet.milk", "value": "oat"},
                )
            ]
        },
    )
    assert bulk.status == 200 and not bulk.body["failed"], bulk.body
    keys["bulk"] = (
        f"{owner}-b1",
        _claim(
            said[3], "positive", idempotency_key=f"{owner}-b1", belief={"key": "diet.milk", "value": "oat"}
        ),
    )
    correction = {"content": said[2], "contradicts": [second.body["deposit"]["id"]], "reason": f"{owner} re-checked",
                  "polarity": "positive", "evidence_grade": "verified", "artifact_refs": ["s3://runs/9"],
                  "idempotency_key": f"{owner}-c1"}  # fmt: skip
    corrected = api.post(f"/users/{owner}/contradict", correction)
    assert corrected.status == 201, corrected.body
    keys["contradict"] = (f"{owner}-c1", correction)
    erased = api.post(
        f"/users/{owner}/deposits", _claim(said[4], "cautionary", idempotency_key=f"{owner}-e1")
    )
    api.delete(f"/users/{owner}/deposits/{erased.body['deposit']['id']}?mode=hard")
    keys["erased"] = (f"{owner}-e1", _claim(said[4], "cautionary", idempotency_key=f"{owner}-e1"))
    api.delete(f"/users/{owner}/deposits/{corrected.body['deposit']['id']}?reason=retracted%20for%20{owner}")
    observed = api.post(
        f"/users/{owner}/beliefs/diet.milk/observations", {"value": said[5], "idempotency_key": f"{owner}-o1"}
    )
    assert observed.status == 201, observed.body
    keys["observation"] = (f"{owner}-o1", {"value": said[5], "idempotency_key": f"{owner}-o1"})
    channel = Channel.objects.select_related("tier").get(name="agent-a")
    observation_record(user_id=owner, key="home.city", value=f"{owner} lives by the harbour", channel=channel)
    belief_confirm(user_id=owner, key="diet.milk", value="oat", reviewer="rita")
    # The bag is in conflict again (the correction was retracted): a reviewer claims, skips, resolves it.
    bag = ScopeBag.objects.get(user_id=owner)
    claim_bag(reviewer="remy", user_id=owner, bag_id=bag.pk)
    conflict_skip(reviewer="remy", user_id=owner, bag_id=bag.pk, note=f"skipping {owner} for now")
    live = [str(d.pk) for d in Deposit.objects.filter(user_id=owner, polarity="positive").live()]
    bag_resolve(user_id=owner, bag_id=bag.pk, keep=live, reason=f"{owner}: the lamp holds", reviewer="rita")
    recall_record(user_id=owner, results=recall(user_id=owner, query="lighthouse"))
    diagnostics_recompute(all_owners=True)
    return keys


def view(owner: str) -> dict[str, Any]:
    """What reads of the owner answer, with its id written as OWNER (an error's request id, which
    names the request, not the owner, left out)."""
    api = make_client(channel="reader", perms=("read",))
    paths = [
        "/deposits?include_retracted=true", "/recall?q=lighthouse%20lamp", "/bags", "/health", "/peek",
        "/beliefs", "/beliefs/diet.milk", "/beliefs/diet.milk/revisions",
    ]  # fmt: skip
    answers = {}
    for path in paths:
        answer = api.get(f"/users/{owner}{path}")
        body = json.loads(json.dumps(answer.body).replace(owner, "OWNER"))
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            body["error"].pop("request_id", None)
        answers[path] = (answer.status, body)
    return answers


def rows_of(owner: str) -> dict[str, list[str]]:
    """Every row of the owner in every table with a user_id (but the recall log, which each read
    of recall adds to), as text."""
    return {
        model._meta.db_table: sorted(
            repr(sorted(row.items())) for row in model.objects.filter(user_id=owner).values()
        )
        for model in owner_models()
        if model is not RecallLog
    }


def scan(needles: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Every table of the database (its rows as text, bytes decoded), and those holding a needle."""
    tables = sorted(connection.introspection.table_names(include_views=False))
    found: dict[str, list[str]] = {}
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            for row in cursor.fetchall():
                text = " ".join(
                    bytes(value).decode("utf-8", "replace")
                    if isinstance(value, (bytes, memoryview))
                    else str(value)
                    for value in row
                )
                for needle in needles:
                    if needle in text:
                        found.setdefault(table, []).append(needle)
    return tables, found


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    channel_get_or_create(name="agent-a", tier_name="agent_own")
    make_login("reviewer")
    make_login("second-reviewer")
    writer = make_client(perms=("read", "write", "erase"))
    kept_keys = memory_of(KEPT, writer)
    gone_keys = memory_of(GONE, writer)
    job = job_record(name="verify_beliefs", trigger="command", params={"owner": GONE, "others": [KEPT]})
    JobRun.objects.filter(pk=job.pk).update(
        counts={"mismatched": 2, "mismatches": [[GONE, "diet.milk"], [KEPT, "diet.milk"]]},
        error=f"belief diet.milk of {GONE} differs from its replay",
    )
    return {"writer": writer, "gone_keys": gone_keys, "kept_keys": kept_keys, "job": job.pk}


def test_forgetting_an_owner_leaves_nothing_of_it_and_every_other_owner_as_it_was(world, figures):
    kept_before = rows_of(KEPT)
    assert all(
        kept_before[table] for table in ("deposits_deposit", "beliefs_beliefrevision", "diagnostics_snapshot")
    )
    never = view(NEVER)
    assert view(GONE) != never
    eraser = make_client(channel="gdpr-desk", perms=("read", "write", "erase"))

    answer = eraser.delete(f"/users/{GONE}?confirm={GONE}")

    assert answer.status == 200, answer.body
    assert answer.body == {
        "kind": "forget_result", "user_id": GONE, "deposits": 5, "edges": 2, "observations": 4,
        "beliefs": 2, "keys_tombstoned": 6,
    }  # fmt: skip
    # No table holds its id or a sentence it wrote (scanned before any read: a recall of any
    # owner, one who never wrote too, is logged); the other owner's are all still there.
    tables, found = scan([GONE, *sentences(GONE)])
    model_tables = {model._meta.db_table for model in apps.get_models()}
    assert model_tables <= set(tables)
    assert found == {}, found
    _, kept_found = scan(sentences(KEPT))
    assert {needle for needles in kept_found.values() for needle in needles} == set(sentences(KEPT)) - {
        sentences(KEPT)[4]  # erased by its owner
    }
    figures(
        f"[forget] {len(tables)} tables scanned for the forgotten owner's id and {len(sentences(GONE))} sentences, "
        f"none found: {', '.join(tables)}\n[forget] tables its rows were deleted from (every model with a "
        f"user_id): {', '.join(m._meta.db_table for m in owner_models())}"
    )
    # Every read answers as for an owner who never wrote.
    assert view(GONE) == never
    # A replay of any of its keys is 410 erased, and writes nothing.
    writer = world["writer"]
    for route, (_, body) in world["gone_keys"].items():
        path = {
            "add": "/deposits", "erased": "/deposits", "bulk": "/deposits/bulk",
            "contradict": "/contradict", "observation": "/beliefs/diet.milk/observations",
        }[route]  # fmt: skip
        replay = writer.post(f"/users/{GONE}{path}", {"items": [body]} if route == "bulk" else body)
        if route == "bulk":
            assert replay.body["failed"][0]["error"]["code"] == "erased", replay.body
        else:
            assert (replay.status, replay.body["error"]["code"]) == (410, "erased"), (route, replay.body)
    assert view(GONE) == never
    # The other owner, and the deployment's counts, are as they were.
    assert rows_of(KEPT) == kept_before
    assert_bags_match_a_recount()
    job = JobRun.objects.get(pk=world["job"])
    assert job.counts == {"mismatched": 2, "mismatches": [[KEPT, "diet.milk"]]}
    assert job.params == {"owner": "[forgotten owner]", "others": [KEPT]}


def test_every_dashboard_page_shows_nothing_of_a_forgotten_owner(world):
    owner_forget(user_id=GONE)
    reviewer = logged_in("reviewer")
    for path in (
        "/", "/owners/", f"/owners/?q={GONE[:6]}", "/conflicts/", f"/conflicts/?owner={GONE}",
        "/conflicts/resolved/", f"/conflicts/next/?owner={GONE}", "/health/", f"/health/?owner={GONE}", "/jobs/",
        f"/owners/{GONE}/", f"/owners/{GONE}/recall/?q=lighthouse", f"/owners/{GONE}/beliefs/",
        f"/owners/{GONE}/beliefs/diet.milk/",
    ):  # fmt: skip
        response = reviewer.get(path)
        html = response.content.decode()
        for sentence in sentences(GONE):
            assert sentence not in html, (path, sentence)
        assert response.status_code in (200, 404), path
        if GONE in path:
            # A page asked about the owner answers as it does for one who never wrote.
            never = reviewer.get(path.replace(GONE, NEVER))
            assert response.status_code == never.status_code, path
        else:
            assert GONE not in html, path
    # The other owner's pages still show it.
    assert sentences(KEPT)[0] in reviewer.get(f"/owners/{KEPT}/recall/?q=lighthouse").content.decode()


def test_forgetting_needs_the_erase_permission_the_owner_and_the_id_typed_again(world):
    writer = world["writer"]
    confined = make_client(channel="tenant", perms=("read", "write", "erase"), prefix="keep-")
    assert writer.delete(f"/users/{GONE}?confirm={GONE}").status == 200  # the writer holds erase
    reader = make_client(channel="reader-2", perms=("read", "write"))
    assert reader.delete(f"/users/{KEPT}?confirm={KEPT}").status == 403
    assert confined.delete(f"/users/{GONE}?confirm={GONE}").status == 403
    refused = confined.delete(f"/users/{KEPT}?confirm=keep-me")
    assert (refused.status, refused.body["error"]["field"]) == (422, "confirm")
    assert confined.delete(f"/users/{KEPT}").status == 422
    assert Deposit.objects.filter(user_id=KEPT).exists()
    # Forgetting an owner that holds nothing changes nothing, and says so.
    again = confined.delete("/users/keep-nobody?confirm=keep-nobody")
    assert again.body == {
        "kind": "forget_result", "user_id": "keep-nobody", "deposits": 0, "edges": 0, "observations": 0,
        "beliefs": 0, "keys_tombstoned": 0,
    }  # fmt: skip


def test_an_owner_forgotten_writes_anew_with_new_keys_and_its_tombstones_expire(world):
    owner_forget(user_id=GONE)
    writer = world["writer"]
    fresh = writer.post(
        f"/users/{GONE}/deposits",
        _claim("a new claim after forgetting", "positive", idempotency_key="new-key"),
    )
    assert fresh.status == 201
    later = timezone.now() + timezone.timedelta(hours=25)
    from deposits.services.deposits import idempotency_expire

    assert idempotency_expire(now=later)["deleted"] >= 6
    _, body = world["gone_keys"]["add"]
    assert writer.post(f"/users/{GONE}/deposits", body).status == 201
