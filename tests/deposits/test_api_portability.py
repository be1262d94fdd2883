"""Export and import of an owner (portability.md): the stream's shape, who may ask, bad input.

GET /users/{id}/export and POST /users/{id}/import; bad input is answered clearly with nothing
written that should not be.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from beliefs.models import BeliefRevision
from beliefs.services import api_key_create, channel_get_or_create
from deposits.models import Contradiction, Deposit
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SCOPE = {"model": "gpt-5", "dataset": "evals", "env": "prod"}


def _claim(content: str, polarity: str = "positive", **extra: Any) -> dict[str, Any]:
    return {
        "content": content, "polarity": polarity, "evidence_grade": "verified",
        "artifact_refs": ["s3://runs/1"], "scope": SCOPE, **extra,
    }  # fmt: skip


class Raw:
    """The API with a key, for bodies that are not JSON and answers that are streamed."""

    def __init__(self, secret: str) -> None:
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")

    def export(self, user: str, query: str = "", **headers: str) -> tuple[int, bytes, Any]:
        response = self.client.get(f"/api/v1/users/{user}/export{query}", **headers)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        return response.status_code, body, response

    def import_(self, user: str, body: bytes, query: str = "") -> tuple[int, dict[str, Any]]:
        response = self.client.post(
            f"/api/v1/users/{user}/import{query}", body, content_type="application/x-ndjson"
        )
        return response.status_code, json.loads(response.content)


def lines_of(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.decode().splitlines()]


def ndjson(*lines: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


HEADER = {"kind": "atlaso_export", "version": 1, "user_id": "anyone"}


@pytest.fixture
def admin() -> Raw:
    _, secret = api_key_create(
        name="mover", channel_name="mover", tier_name="agent_own", permissions=["read", "write", "admin"]
    )
    return Raw(secret)


@pytest.fixture
def alice(api: ApiClient) -> dict[str, str]:
    """Alice's memory: a claim, one it contradicts by a correction since retracted, a belief."""
    channel_get_or_create(name="agent-a", tier_name="agent_own")
    first = api.post(
        "/users/alice/deposits", _claim("the threshold holds at 0.7", idempotency_key="k-first")
    ).body
    second = api.post("/users/alice/deposits", _claim("the threshold fails at 0.7", "negative")).body
    fix = api.post(
        "/users/alice/contradict",
        {**_claim("re-measured: it holds"), "contradicts": [second["deposit"]["id"]], "reason": "re-run"},
    ).body
    api.delete(f"/users/alice/deposits/{fix['deposit']['id']}?reason=wrong%20run")
    api.post("/users/alice/beliefs/diet.milk/observations", {"value": "oat"})
    return {"first": first["deposit"]["id"], "second": second["deposit"]["id"], "fix": fix["deposit"]["id"]}


def test_the_export_is_a_header_then_each_kind_in_an_order_an_importer_can_write(admin, api, alice):
    status, body, response = admin.export("alice")
    assert status == 200
    assert response["Content-Type"] == "application/x-ndjson"
    assert 'filename="alice.atlaso.jsonl"' in response["Content-Disposition"]
    lines = lines_of(body)
    header = lines[0]
    assert header["kind"] == "atlaso_export" and header["version"] == 1 and header["user_id"] == "alice"
    assert header["counts"] == {"deposits": 3, "edges": 1, "retractions": 1, "observations": 1, "outcomes": 0}
    kinds = [line["kind"] for line in lines[1:]]
    assert kinds == ["deposit"] * 3 + ["edge", "retraction", "observation"]
    # Each deposit line is the wire deposit the API answers, plus its key inside the window.
    for line in lines[1:4]:
        shown = api.get(f"/users/alice/deposits/{line['id']}").body
        for audit in ("superseded_by", "retracted", "retracted_reason"):
            shown.pop(audit)
        assert {k: v for k, v in line.items() if not k.startswith("idempotency_")} == shown
    keyed = {line["id"]: line.get("idempotency_key") for line in lines[1:4]}
    assert keyed[alice["first"]] == "k-first" and keyed[alice["second"]] is None
    assert lines[4] == {
        "kind": "edge", "from": alice["fix"], "to": alice["second"], "reason": "re-run",
        "created_at": lines[4]["created_at"],
    }  # fmt: skip
    assert lines[5]["deposit_id"] == alice["fix"] and lines[5]["reason"] == "wrong run"


def test_the_export_is_gzip_when_the_client_accepts_it_and_leaves_out_retractions_when_asked(admin, alice):
    _, body, response = admin.export("alice", HTTP_ACCEPT_ENCODING="br, gzip;q=0.8")
    assert response["Content-Encoding"] == "gzip"
    plain = lines_of(gzip.decompress(body))
    assert [line["kind"] for line in plain].count("deposit") == 3
    _, _, response = admin.export("alice", HTTP_ACCEPT_ENCODING="gzip;q=0")
    assert not response.has_header("Content-Encoding")
    _, live_only, _ = admin.export("alice", "?include_retracted=false")
    lines = lines_of(live_only)
    assert lines[0]["counts"] == {
        "deposits": 2,
        "edges": 0,
        "retractions": 0,
        "observations": 1,
        "outcomes": 0,
    }
    assert alice["fix"] not in live_only.decode()


def test_export_and_import_need_read_and_write_on_the_owner(alice):
    _, reader = api_key_create(name="r", channel_name="reader", permissions=["read"])
    _, tenant = api_key_create(
        name="t", channel_name="tenant", permissions=["read", "write"], user_prefix="tenant-a:"
    )
    assert Raw(reader).export("alice")[0] == 200
    assert Raw(reader).import_("alice", ndjson(HEADER))[0] == 403
    assert Raw(tenant).export("alice")[0] == 403
    assert Raw(tenant).import_("alice", ndjson(HEADER))[0] == 403
    assert Raw("nope").export("alice")[0] == 401


def test_an_import_writes_the_good_lines_and_names_each_bad_one(admin, alice):
    _, body, _ = admin.export("alice")
    lines = body.decode().splitlines()
    bad = "\n".join([
        lines[0],
        lines[1],
        json.dumps({"kind": "bag", "bag_id": "x"}),  # a line of another kind
        json.dumps({"kind": "edge", "from": lines_of(lines[1].encode())[0]["id"],
                    "to": "00000000-0000-4000-8000-000000000000", "reason": "", "created_at": "2025-01-01T00:00:00+00:00"}),
        json.dumps({**json.loads(lines[2]), "polarity": "sideways"}),
        json.dumps({**json.loads(lines[2]), "created_at": "2999-01-01T00:00:00+00:00"}),
        lines[3][: len(lines[3]) // 2],  # cut short: the body ends inside it
    ])  # fmt: skip
    status, result = admin.import_("bob", bad.encode())
    assert status == 200, result
    assert result["deposits"] == {"committed": 1, "duplicates": 0, "failed": 2}
    assert result["edges"] == {"committed": 0, "duplicates": 0, "failed": 1}
    failed = {entry["line"]: entry["error"] for entry in result["failed_lines"]}
    assert sorted(failed) == [3, 4, 5, 6, 7]
    assert "'bag' is not a kind of line" in failed[3]["message"] and failed[3]["allowed"][0] == "deposit"
    assert failed[4]["code"] == "missing_contradicts" and failed[4]["missing"] == [
        "00000000-0000-4000-8000-000000000000"
    ]
    assert failed[5]["field"] == "polarity" and failed[5]["allowed"] == [
        "positive",
        "negative",
        "cautionary",
        "open",
    ]
    assert "in the future" in failed[6]["message"]
    assert "cut short" in failed[7]["message"]
    assert result["is_partial"] is True
    assert Deposit.objects.filter(user_id="bob").count() == 1


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        (ndjson({**HEADER, "version": 2}), "version", "version 2; this server reads version 1"),
        (ndjson({"kind": "deposit", "id": "x"}), "body", "the first line must be the header"),
        (b"", "body", "the body is empty"),
        (b"\x1f\x8b\x08\x00 this is not gzip at all", "body", "is not gzip"),
        (gzip.compress(ndjson(HEADER, *[{"kind": "outcome"}] * 3000))[:-40], "body", "cut short"),
        (b"not json at all\n", "body", "cannot be read"),
    ],
    ids=["version 2", "no header", "empty", "gzip that is not gzip", "gzip cut short", "not JSON"],
)
def test_a_body_this_format_cannot_read_is_refused_whole_and_writes_nothing(admin, body, field, says):
    status, result = admin.import_("carol", body)
    assert status == 422, result
    assert result["error"]["field"] == field and says in result["error"]["message"], result
    assert not Deposit.objects.filter(user_id="carol").exists()


@pytest.mark.parametrize("indent", [None, 2], ids=["one line", "pretty-printed"])
def test_a_mem0_export_sent_as_ours_is_told_to_say_its_format(admin, indent):
    body = json.dumps({"results": [{"id": "m-1", "memory": "Prefers tea"}]}, indent=indent).encode()
    status, result = admin.import_("carol", body)
    assert status == 422 and "imported with format=mem0" in result["error"]["message"], result
    assert admin.import_("carol", body, "?format=mem0")[1]["deposits"]["committed"] == 1


def test_gzip_is_read_by_its_first_bytes_whatever_the_content_type(admin, alice):
    _, body, _ = admin.export("alice", HTTP_ACCEPT_ENCODING="gzip")
    status, result = admin.import_("dave", body)
    assert status == 200 and result["deposits"]["committed"] == 3, result
    status, again = admin.import_("dave", body)
    assert again["deposits"] == {"committed": 0, "duplicates": 3, "failed": 0}
    assert again["edges"]["duplicates"] == again["retractions"]["duplicates"] == 1
    assert again["is_partial"] is False


def test_a_dry_run_reports_what_would_happen_and_writes_nothing(admin, alice):
    _, body, _ = admin.export("alice")
    status, result = admin.import_("erin", body, "?dry_run=true")
    assert status == 200 and result["dry_run"] is True
    assert result["deposits"]["committed"] == 3 and result["edges"]["committed"] == 1
    assert result["observations"]["committed"] == 1
    assert not Deposit.objects.filter(user_id="erin").exists()
    assert not BeliefRevision.objects.filter(user_id="erin").exists()


def test_an_import_asks_for_an_embedding_run_once_it_has_written_and_a_dry_run_does_not(
    admin, alice, local_embedder, monkeypatch
):
    from deposits.services import embedding

    asked: list[bool] = []
    monkeypatch.setattr(embedding, "_trigger", lambda: asked.append(True))
    monkeypatch.setattr(embedding, "_wanted_at", -1e9)
    _, body, _ = admin.export("alice")
    admin.import_("frank", body, "?dry_run=true")
    assert asked == []
    status, result = admin.import_("frank", body)
    assert status == 200 and result["deposits"]["committed"] == 3
    assert asked == [True]


def test_the_gate_judges_every_line_and_abort_stops_at_the_first_it_refuses(admin):
    broad_positive = {
        "kind": "deposit",
        "id": "11111111-1111-4111-8111-111111111111",
        "content": "it always works",
        "polarity": "positive",
        "evidence_grade": "anecdotal",
        "created_at": "2025-01-01T00:00:00+00:00",
    }
    fine = {"kind": "deposit", "id": "22222222-2222-4222-8222-222222222222", "content": "a note",
            "created_at": "2025-01-02T00:00:00+00:00"}  # fmt: skip
    body = ndjson(HEADER, fine, broad_positive, {**fine, "id": "33333333-3333-4333-8333-333333333333"})
    _, skipped = admin.import_("fay", body)
    assert skipped["deposits"] == {"committed": 2, "duplicates": 0, "failed": 1}
    assert skipped["failed_lines"][0]["error"]["code"] == "gate_rejected"
    assert "replicated" in skipped["failed_lines"][0]["error"]["gate_reason"]
    _, aborted = admin.import_("gus", body, "?on_gate_reject=abort")
    assert (
        aborted["deposits"] == {"committed": 1, "duplicates": 0, "failed": 1}
        and aborted["is_partial"] is True
    )
    assert list(Deposit.objects.filter(user_id="gus").values_list("content", flat=True)) == ["a note"]


def test_a_writer_key_records_every_line_on_its_own_channel_an_admin_key_keeps_the_lines(admin, api, alice):
    _, body, _ = admin.export("alice")
    _, secret = api_key_create(
        name="w", channel_name="importer", tier_name="web_fetch", permissions=["read", "write"]
    )
    Raw(secret).import_("hal", body)
    assert set(Deposit.objects.filter(user_id="hal").values_list("channel", flat=True)) == {"importer"}
    assert set(BeliefRevision.objects.filter(user_id="hal").values_list("channel", "tier")) == {
        ("importer", "web_fetch")
    }
    admin.import_("ida", body)
    assert set(Deposit.objects.filter(user_id="ida").values_list("channel", flat=True)) == {"agent-a"}
    assert set(BeliefRevision.objects.filter(user_id="ida").values_list("channel", "tier")) == {
        ("agent-a", "agent_own")
    }
    # Ids another owner holds: new ones, and the edge between them found through them.
    new_ids = set(Deposit.objects.filter(user_id="ida").values_list("id", flat=True))
    assert not new_ids & set(Deposit.objects.filter(user_id="alice").values_list("id", flat=True))
    assert (
        Contradiction.objects.filter(
            user_id="ida", new_deposit_id__in=new_ids, old_deposit_id__in=new_ids
        ).count()
        == 1
    )


def test_a_mem0_export_arrives_as_open_anecdotal_claims_with_its_metadata_and_ids(admin, api):
    body = (FIXTURES / "mem0_export.json").read_bytes()
    status, result = admin.import_("alex", body, "?format=mem0")
    assert status == 200 and result["deposits"] == {"committed": 4, "duplicates": 0, "failed": 0}, result
    rows = {row.artifact_refs[0]: row for row in Deposit.objects.filter(user_id="alex")}
    moved = rows["mem0:7f6e3a2c-1b0d-4e8f-9a7b-2c3d4e5f6a02"]
    assert moved.content == "Moved from Lyon to Nagoya (名古屋) in 2024"
    assert (moved.polarity, moved.evidence_grade) == ("open", "anecdotal")
    assert moved.tags == ["mem0:place=名古屋", "mem0:source=onboarding"]
    # An updated memory arrives once, as its latest text, dated when that text was written.
    assert moved.created_at.isoformat() == "2025-02-14T15:45:00.250000+00:00"
    assert rows["mem0:7f6e3a2c-1b0d-4e8f-9a7b-2c3d4e5f6a03"].tags == [
        "mem0:severity=high", "mem0:source=doctor note", 'mem0:tags=["health", "allergy"]'
    ]  # fmt: skip
    status, again = admin.import_("alex", body, "?format=mem0")
    assert again["deposits"] == {"committed": 0, "duplicates": 4, "failed": 0}
    hits = api.get("/users/alex/recall?q=oat%20milk").body["items"]
    assert [hit["content"] for hit in hits] == ["Prefers oat milk in flat whites"]
    bare = json.dumps(json.loads(body)["results"][:1]).encode()
    assert admin.import_("alex-2", bare, "?format=mem0")[1]["deposits"]["committed"] == 1
    refused = admin.import_("alex-3", b'{"memories": []}', "?format=mem0")
    assert refused[0] == 422 and "get_all" in refused[1]["error"]["message"]


def test_a_mem0_memory_that_cannot_be_read_is_a_failed_deposit(admin):
    memories = [
        {"id": "m-1", "memory": "Prefers tea", "created_at": "2025-01-02T03:04:05Z"},
        "not a memory",
        {"id": "m-3"},
        [],
        {"memory": "no id"},
    ]
    status, result = admin.import_("alexa", json.dumps(memories).encode(), "?format=mem0")
    # Every memory is a deposit: the four it cannot read are the deposits' failures, as listed.
    assert status == 200 and result["deposits"] == {"committed": 1, "duplicates": 0, "failed": 4}, result
    assert [entry["line"] for entry in result["failed_lines"]] == [2, 3, 4, 5]
    assert result["is_partial"] is True


def test_import_answers_are_declared_in_the_schema(admin):
    schema = admin.client.get("/api/v1/openapi.json").json()
    operation = schema["paths"]["/api/v1/users/{user_id}/import"]["post"]
    assert "application/x-ndjson" in operation["requestBody"]["content"]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "ImportResultOut"
    )
    exported = schema["paths"]["/api/v1/users/{user_id}/export"]["get"]["responses"]["200"]
    assert "application/x-ndjson" in exported["content"]
