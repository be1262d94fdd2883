"""The API keys a fault test uses, made in its own database before Atlaso serves it."""

from __future__ import annotations

from tests.faults.processes import Atlaso

MAKE_KEYS = """
from beliefs.services import api_key_create
_, agent = api_key_create(name="agent", channel_name="agent-a", tier_name="agent_own", permissions=("read", "write"))
_, admin = api_key_create(name="ops", channel_name="ops", tier_name="untrusted", permissions=("read", "admin"))
result = {"agent": agent, "admin": admin}
"""


def make_keys(atlaso: Atlaso) -> tuple[str, str]:
    """A read/write key on an agent_own channel, and an operator's unconfined admin key."""
    keys = atlaso.django(MAKE_KEYS)
    return keys["agent"], keys["admin"]


def deposit(content: str) -> dict[str, object]:
    """A deposit the write gate accepts."""
    return {"content": content, "polarity": "open", "scope": {"model": "m", "env": "prod"}}
