"""What a learner algorithm needs to know about the agents: observation and action sizes, in one flat
agent order across the env's groups (the order of ``env.group_map``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class AgentSpace:
    """One agent's observation and action sizes.

    Args:
        name: the agent's name in the env (``"agent_0"``).
        group: its group (``"agent"``, ``"adversary"``).
        obs_dim: length of its observation vector.
        action_dim: number of discrete actions, or the length of a continuous action.
        discrete: whether actions are categorical.
        low: lower bound of a continuous action (all dimensions).
        high: upper bound of a continuous action (all dimensions).

    Examples:
        >>> AgentSpace("agent_0", "agent", obs_dim=18, action_dim=5, discrete=True).action_dim
        5
    """

    name: str
    group: str
    obs_dim: int
    action_dim: int
    discrete: bool
    low: float = -1.0
    high: float = 1.0


def padded_dims(agents: Sequence[AgentSpace]) -> tuple[int, int]:
    """The widest observation and action over ``agents``: every agent's tensors are padded to these."""
    if not agents:
        raise ValueError("at least one agent is needed")
    return max(a.obs_dim for a in agents), max(a.action_dim for a in agents)
