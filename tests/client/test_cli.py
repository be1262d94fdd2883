"""The `atlaso` command against a served Atlaso: doctor, recall, add, health, human and --json."""

from __future__ import annotations

import io
import json
import re

import pytest

from atlaso.cli import main
from tests.client.served import ServedAtlaso, free_port


def atlaso(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_doctor_reports_the_url_the_key_and_what_it_may_do(client_env: ServedAtlaso):
    code, out, _ = atlaso("doctor")
    assert code == 0, out
    assert f"base URL: {client_env.url} (from ATLASO_BASE_URL)" in out
    assert "API key:  set (from ATLASO_API_KEY)" in out
    assert "answered GET /api/v1/keys/me in" in out
    assert "key:      'client-rw' on channel 'client-rw', tier agent_own" in out
    assert "may:      read, write" in out
    assert "reaches:  every owner" in out
    assert out.rstrip().endswith("ok")
    assert client_env.keys["client-rw"] not in out  # a prefix only


def test_doctor_names_a_confined_keys_prefix(client_env: ServedAtlaso, monkeypatch):
    monkeypatch.setenv("ATLASO_API_KEY", client_env.keys["client-tenant"])
    code, out, _ = atlaso("doctor")
    assert code == 0 and "reaches:  owners whose user_id starts 'tenant-a:'" in out


def test_doctor_fails_without_a_key_saying_how_to_get_one(client_env: ServedAtlaso, monkeypatch):
    monkeypatch.delenv("ATLASO_API_KEY")
    code, out, err = atlaso("doctor")
    assert code == 1
    assert "API key:  not set" in out
    assert "server:   reachable (its API answers)" in out  # it still says whether the server is up
    assert err.startswith("atlaso doctor: no API key") and "create_api_key" in err


def test_doctor_fails_on_a_refused_key(client_env: ServedAtlaso, monkeypatch):
    monkeypatch.setenv("ATLASO_API_KEY", "atl_revoked_or_never_made")
    code, out, err = atlaso("doctor")
    assert code == 1 and "refused the key" in out
    assert err == "atlaso doctor: the key is unknown or revoked; make a new one\n"


def test_a_refused_key_or_a_missing_permission_says_where_to_look(client_env: ServedAtlaso, monkeypatch):
    code, _, err = atlaso("forget", "cli-nobody", "--yes")  # client-rw may read and write, not erase
    assert code == 1
    assert err.startswith("atlaso forget: this API key lacks the 'erase' permission\n")
    assert "`atlaso doctor` lists what this key may do" in err and "--perm erase" in err
    monkeypatch.setenv("ATLASO_API_KEY", "atl_revoked_or_never_made")
    code, _, err = atlaso("recall", "cli-nobody", "tea")
    assert code == 1 and err.endswith(
        "set ATLASO_API_KEY to a key this server knows; `atlaso doctor` checks it\n"
    )


def test_doctor_fails_when_nothing_answers(monkeypatch):
    monkeypatch.setenv("ATLASO_BASE_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("ATLASO_API_KEY", "atl_any")
    code, out, err = atlaso("doctor")
    assert code == 1 and "not reached" in out and "make run" in err


def test_add_then_recall_shows_the_conflict(client_env: ServedAtlaso, owner: str):
    facets = ["--model", "gpt-5", "--dataset", "evals", "--env", "prod"]
    code, out, _ = atlaso("add", owner, "retries fix the flaky upload", "--polarity", "positive",
                          "--evidence-grade", "observed", *facets)  # fmt: skip
    assert code == 0 and out.startswith("stored: ")
    code, out, _ = atlaso("add", owner, "retries do not fix the flaky upload", "--polarity", "negative",
                          "--evidence-grade", "observed", *facets, "--json")  # fmt: skip
    added = json.loads(out)
    assert code == 0 and added["kind"] == "add_result" and added["deposit"]["scope"]["env"] == "prod"

    code, out, _ = atlaso("recall", owner, "flaky upload")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "2 hits across 1 bag · 1 bag in conflict · not confident"
    assert sum("[in conflict]" in line for line in lines) == 2
    assert any(line.startswith("  disagrees with ") for line in lines)

    code, out, _ = atlaso("recall", owner, "flaky upload", "--json", "--limit", "1")
    wire = json.loads(out)
    assert wire["kind"] == "search_results" and len(wire["items"]) == 1 and wire["has_disagreement"]


def test_recall_takes_a_mode_and_a_server_without_an_embedder_refuses_meaning(
    client_env: ServedAtlaso, owner: str
):
    atlaso("add", owner, "retries fix the flaky upload")
    code, out, _ = atlaso("recall", owner, "flaky upload", "--mode", "words", "--json")
    assert code == 0 and [hit["matched_by"] for hit in json.loads(out)["items"]] == ["words"]
    code, out, err = atlaso("recall", owner, "flaky upload", "--mode", "meaning")
    assert code == 1 and out == "" and "needs an embedder" in err


def test_add_with_a_key_twice_is_a_replay(client_env: ServedAtlaso, owner: str):
    first = atlaso("add", owner, "likes tea", "--idempotency-key", "ak_cli_1")[1]
    second = atlaso("add", owner, "likes tea", "--idempotency-key", "ak_cli_1")[1]
    stored = re.fullmatch(r"stored: (\S+) \(open, anecdotal\)\n", first)
    assert stored, first
    assert second == f"already stored (a replay): {stored[1]} (open, anecdotal)\n"


def test_a_gate_rejection_exits_1_with_the_reason(client_env: ServedAtlaso, owner: str):
    code, out, err = atlaso("add", owner, "everything works", "--polarity", "positive")
    assert code == 1 and out == ""
    assert err.startswith("atlaso add: ")
    assert err.count("positive/broad claim requires evidence_grade>=replicated") == 1


def test_health_prints_the_verdict_and_pillars(client_env: ServedAtlaso, owner: str):
    atlaso("add", owner, "likes tea")
    code, out, _ = atlaso("health", owner, "--window-days", "7")
    assert code == 0
    verdict, pillars = out.splitlines()
    assert verdict.startswith("Memory is ") and "FMI" in verdict
    assert "1 live deposits · last 7 days" in pillars
    code, out, _ = atlaso("health", owner, "--json")
    assert json.loads(out)["kind"] == "diagnostics"


def test_a_bad_argument_exits_2_with_usage(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["add", "alice", "x", "--polarity", "strong"])
    assert exited.value.code == 2
    assert "invalid choice: 'strong'" in capsys.readouterr().err
