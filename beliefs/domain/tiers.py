"""The default provenance tiers of beliefs.md, as plain data, and what a tier's ceiling allows."""

from __future__ import annotations

from dataclasses import dataclass

from beliefs.domain.rule import RuleSettings


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


def can_move_beliefs(ceiling: float, settings: RuleSettings) -> bool:
    """Whether a claim on a channel with this ceiling can ever move a belief.

    r never exceeds the ceiling, and the rule leaves an observation with r at or below the pivot
    inert: a ceiling at or below the pivot keeps its channels inert, at any volume.
    """
    return ceiling > settings.pivot
