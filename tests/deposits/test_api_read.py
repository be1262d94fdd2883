from __future__ import annotations

import uuid

from tests.conftest import make_client


def add(api, content, user="alice"):
    return api.post(f"/users/{user}/deposits", {"content": content}).body["deposit"]


def test_it_reads_one_deposit_with_its_audit_state(api):
    added = add(api, "likes tea")
    answer = api.get(f"/users/alice/deposits/{added['id']}")
    assert answer.status == 200
    assert answer.body == {**added, "superseded_by": [], "retracted": False, "retracted_reason": None}


def test_it_answers_404_for_an_unknown_id(api):
    answer = api.get(f"/users/alice/deposits/{uuid.uuid4()}")
    assert answer.status == 404
    assert answer.body["kind"] == "error"
    assert answer.body["error"]["code"] == "not_found"


def test_it_answers_404_for_a_malformed_id(api):
    for malformed in ("not-a-uuid", "1", "00000000-0000-0000-0000-00000000000g"):
        answer = api.get(f"/users/alice/deposits/{malformed}")
        assert answer.status == 404
        assert answer.body["error"]["code"] == "not_found"


def test_it_answers_404_for_another_owners_deposit(api):
    bobs = add(api, "bob's secret", user="bob")
    answer = api.get(f"/users/alice/deposits/{bobs['id']}")
    assert answer.status == 404
    assert answer.body["error"]["code"] == "not_found"
    assert "bob's secret" not in str(answer.body)


def test_it_lists_an_owners_deposits_newest_first_in_pages(api):
    ids = [add(api, f"note {i}")["id"] for i in range(5)]
    add(api, "bob's", user="bob")
    first = api.get("/users/alice/deposits?limit=2")
    rest = api.get("/users/alice/deposits?limit=2&offset=4")
    assert first.status == rest.status == 200
    assert first.body["kind"] == "deposit_page"
    assert (first.body["total"], first.body["limit"], first.body["offset"]) == (5, 2, 0)
    assert [d["id"] for d in first.body["items"]] == ids[::-1][:2]
    assert [d["id"] for d in rest.body["items"]] == [ids[0]]
    assert (rest.body["total"], rest.body["offset"]) == (5, 4)


def test_it_lists_nothing_for_an_owner_without_deposits(api):
    answer = api.get("/users/nobody/deposits")
    assert answer.status == 200
    assert (answer.body["items"], answer.body["total"]) == ([], 0)


def test_it_accepts_a_page_of_200_and_refuses_more(api):
    assert api.get("/users/alice/deposits?limit=200").status == 200
    for bad in ("201", "0", "-1", "abc"):
        answer = api.get(f"/users/alice/deposits?limit={bad}")
        assert answer.status == 422
        assert answer.body["error"]["code"] == "validation_error"
        assert answer.body["error"]["field"] == "limit"


def test_it_refuses_a_negative_or_absurd_offset_with_422(api):
    for bad in ("-1", str(2**70), "x"):
        answer = api.get(f"/users/alice/deposits?offset={bad}")
        assert answer.status == 422
        assert answer.body["error"]["field"] == "offset"


def test_it_lists_retracted_deposits_only_when_asked(api):
    kept = add(api, "kept")
    gone = add(api, "gone")
    api.delete(f"/users/alice/deposits/{gone['id']}?reason=wrong")
    default = api.get("/users/alice/deposits").body
    everything = api.get("/users/alice/deposits?include_retracted=true").body
    assert [d["id"] for d in default["items"]] == [kept["id"]]
    assert default["total"] == 1
    assert [(d["id"], d["retracted"]) for d in everything["items"]] == [
        (gone["id"], True),
        (kept["id"], False),
    ]
    assert everything["total"] == 2


def test_it_answers_405_immutable_to_put_and_patch_pointing_at_contradict(api):
    added = add(api, "likes tea")
    for method in ("PUT", "PATCH"):
        answer = api.call(method, f"/users/alice/deposits/{added['id']}", {"content": "likes coffee"})
        assert answer.status == 405
        assert answer.body["kind"] == "error"
        assert answer.body["error"]["code"] == "immutable"
        assert "contradict" in answer.body["error"]["message"]
        assert added["id"] in answer.body["error"]["message"]
    assert api.get(f"/users/alice/deposits/{added['id']}").body["content"] == "likes tea"


def test_a_read_only_key_can_read(db):
    writer = make_client(channel="writer")
    reader = make_client(channel="reader", perms=("read",))
    added = add(writer, "likes tea")
    assert reader.get(f"/users/alice/deposits/{added['id']}").status == 200
    assert reader.get("/users/alice/deposits").body["total"] == 1


def test_it_refuses_to_list_a_user_id_outside_the_pattern(api):
    for user in ("-alice", "a" * 129):
        answer = api.get(f"/users/{user}/deposits")
        assert answer.status == 422
        assert answer.body["error"]["field"] == "user_id"
