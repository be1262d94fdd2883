"""`loadtest` against the live server: a short run that passes, and runs whose check must fail."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from atlaso_site.access.models import ApiKey
from atlaso_site.bench.management.commands import loadtest
from deposits.domain.validation import validate_deposit
from deposits.models import Deposit
from deposits.services.deposits import deposit_add, deposit_retract

pytestmark = pytest.mark.django_db(transaction=True)


# The suite's SQLite database lives in memory, shared by the live server's threads through one
# shared cache that locks whole tables: only PostgreSQL takes concurrent clients here.
def concurrent_clients() -> int:
    return 2 if connection.vendor == "postgresql" else 1


def run_loadtest(live_server: Any, **options: Any) -> tuple[str, str]:
    """The command's output and its errors (a failed check's CommandError message last)."""
    out, err = io.StringIO(), io.StringIO()
    options = {"url": live_server.url, "clients": concurrent_clients(), "seconds": 2, "owners": 2} | options
    try:
        call_command("loadtest", stdout=out, stderr=err, **options)
    except CommandError as error:
        err.write(f"CommandError: {error}")
    return out.getvalue(), err.getvalue()


def test_a_short_run_writes_every_kind_reads_every_deposit_back_and_passes(live_server):
    out, err = run_loadtest(live_server)
    assert err == "" and "every acknowledged write is stored exactly once; no 5xx" in out
    for kind in ("add", "recall", "overall"):
        assert re.search(rf"^{kind} +\d+ +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+  2xx \d+$", out, re.M), kind
    acknowledged = int(re.search(r"writes acknowledged: (\d+) deposits", out).group(1))
    stored = Deposit.objects.filter(user_id__startswith="loadtest-").count()
    assert acknowledged >= 5 and re.search(rf"read back: {stored} deposits; lost: 0; stored twice: 0", out)
    # The key it made for the run is revoked at the end.
    assert ApiKey.objects.get(name__startswith="loadtest ").revoked_at is not None


@pytest.fixture
def a_write_lost_and_one_stored_twice(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Before the check reads the first owner back: erase one of its deposits, write another twice."""
    read_back, harmed = loadtest.read_back, {}

    def harm_then_read_back(connection: loadtest.Connection, owner: str, run: str) -> loadtest.ReadBack:
        if not harmed:
            lost, copied = Deposit.objects.filter(user_id=owner).order_by("created_at")[:2]
            deposit_retract(user_id=owner, deposit_id=str(lost.pk), mode="hard", reason="the test loses it")
            fields = {
                "content": copied.content,
                "polarity": copied.polarity,
                "evidence_grade": copied.evidence_grade,
            }
            scope = {"model": copied.scope_model, "dataset": copied.scope_dataset, "env": copied.scope_env}
            deposit_add(
                draft=validate_deposit(owner, fields | {"scope": scope, "task_id": copied.task_id}),
                channel="loadtest",
            )
            harmed.update(lost=str(lost.pk), copied=copied.task_id)
        return read_back(connection, owner, run)

    monkeypatch.setattr(loadtest, "read_back", harm_then_read_back)
    return harmed


def test_the_check_names_an_acknowledged_deposit_that_is_missing_and_one_stored_twice(
    live_server, a_write_lost_and_one_stored_twice
):
    out, err = run_loadtest(live_server, clients=1, owners=1)
    harmed = a_write_lost_and_one_stored_twice
    assert f"deposit {harmed['lost']} (task_id " in err and "was acknowledged but is not stored" in err
    assert f"task_id {harmed['copied']} is stored 2 times" in err
    assert "lost: 1; stored twice: 1" in out
    assert err.strip().endswith(
        "0 answers 5xx, 0 transport errors, 0 answers 4xx, 1 lost, 1 stored twice, 0 other problems"
    )


def test_a_server_error_fails_the_run(live_server, monkeypatch: pytest.MonkeyPatch):
    def broken(**kwargs: Any) -> None:
        raise RuntimeError("the recall is broken")

    monkeypatch.setattr("deposits.api_recall.recall", broken)
    out, err = run_loadtest(live_server, clients=1, seconds=1, owners=1)
    assert re.search(r"^recall .*5xx \d+$", out, re.M) and "CommandError: " in err and "answers 5xx" in err
