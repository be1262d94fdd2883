"""What the beliefs dashboard tests share: beliefs written through the services, and a run."""

from __future__ import annotations

from atlaso_site.access.models import Channel
from beliefs.services import channel_get_or_create, observation_record

XSS = "<script>alert(1)</script>"


def channel(name: str, tier: str) -> Channel:
    return channel_get_or_create(name=name, tier_name=tier)


def believe(user_id: str, key: str, value: str, *, via: Channel, **fields: object) -> None:
    """One observation of `key` = `value` on the channel `via`."""
    observation_record(user_id=user_id, key=key, value=value, channel=via, **fields)


def seed_alice() -> None:
    """alice: coffee_ratio asserted by an agent, and diet:milk only whispered by the web.

    A web page's value for coffee_ratio stays inert beside the agent's; diet:milk, said only by the
    web, is uncertain.
    """
    agent, web = channel("support-agent", "agent_own"), channel("web-reader", "web_fetch")
    believe("alice", "coffee_ratio", "4 oz per tbsp", via=agent)
    believe("alice", "coffee_ratio", XSS, via=web)
    believe("alice", "diet:milk", "oat milk", via=web)
