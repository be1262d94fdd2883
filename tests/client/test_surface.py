"""The part of the client's surface held to the server: `idempotency_key` equals the server's.

The rest of the surface is checked with the package alone, in clients/python/tests.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import atlaso
from deposits.domain.idempotency import idempotency_key as servers_idempotency_key


@given(st.lists(st.one_of(st.text(), st.integers(), st.floats(allow_nan=False)), max_size=6))
def test_idempotency_key_equals_the_servers(parts):
    assert atlaso.idempotency_key(*parts) == servers_idempotency_key(*parts)
