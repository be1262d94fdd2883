"""The default provenance tiers of beliefs.md, as plain data."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DefaultTier:
    """A tier the product seeds: its name, reliability ceiling κ and meaning."""

    name: str
    ceiling: float
    description: str


DEFAULT_TIERS: tuple[DefaultTier, ...] = (
    DefaultTier("user_edit", 0.99, "The owner edited the fact themselves"),
    DefaultTier("user_direct", 0.98, "The owner said it directly"),
    DefaultTier("agent_own", 0.80, "This agent's own reasoning or observation"),
    DefaultTier("tool_output", 0.65, "Output of a tool the agent ran"),
    DefaultTier("document", 0.55, "A document the owner supplied"),
    DefaultTier("agent_third_party", 0.40, "Another agent relayed it"),
    DefaultTier("web_fetch", 0.30, "Fetched from the web"),
    DefaultTier("untrusted", 0.10, "Anything else; a new channel's default"),
)
DEFAULT_CEILINGS: dict[str, float] = {tier.name: tier.ceiling for tier in DEFAULT_TIERS}
