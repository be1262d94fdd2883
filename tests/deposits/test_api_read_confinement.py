"""A read key confined to one tenant's user_ids sees nothing of another tenant's memory."""

from __future__ import annotations

import pytest

from deposits.domain.bags import bag_id
from deposits.domain.types import Scope
from tests.conftest import make_client
from tests.deposits.scenario import NARROW, put

READS = [
    "/users/{user}/recall?q=threshold",
    "/users/{user}/bags",
    "/users/{user}/bags/{bag}",
    "/users/{user}/peek",
    "/users/{user}/health",
]


@pytest.mark.parametrize("path", READS)
def test_a_key_confined_to_tenant_a_gets_403_on_tenant_b(db, path):
    put("positive", "tenant b's threshold", user="tenant-b:x")
    reader = make_client(channel="tenant-a-reader", perms=("read",), prefix="tenant-a:")
    user = "tenant-b:x"
    answer = reader.get(path.format(user=user, bag=bag_id(user, Scope(**NARROW))))
    assert answer.status == 403
    assert answer.body["error"]["code"] == "forbidden"
    assert "threshold" not in str(answer.body)


@pytest.mark.parametrize("path", READS)
def test_the_same_key_reads_its_own_tenant(db, path):
    user = "tenant-a:x"
    put("positive", "tenant a's threshold", user=user)
    reader = make_client(channel="tenant-a-reader", perms=("read",), prefix="tenant-a:")
    assert reader.get(path.format(user=user, bag=bag_id(user, Scope(**NARROW)))).status == 200
