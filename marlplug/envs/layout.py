"""The one reader of a TorchRL multi-agent env's agent layout: groups, agents, sizes, action kinds.

Every part of marlplug that sizes networks or flattens agents (the actor-critic, the learner
algorithms, the flat env adapter) reads the layout here, in the documented flat agent order: groups
in ``env.group_map`` order, agents in their group's order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import torch
from torchrl.data import Bounded, Categorical, OneHot
from torchrl.envs import EnvBase

from marlplug.errors import UserError

#: The key inside a group where an env says which discrete actions are valid (TorchRL's name).
ACTION_MASK = "action_mask"
#: How an env takes a discrete action: an integer (``"index"``) or a one-hot vector; or a vector.
ActionKind = Literal["index", "one_hot", "continuous"]


@dataclass(frozen=True)
class AgentLayout:
    """One agent's observation and action sizes (what a learner algorithm sees per agent).

    Args:
        name: the agent's name in the env (``"agent_0"``).
        group: its group (``"agent"``, ``"adversary"``).
        obs_dim: length of its observation vector.
        action_dim: number of discrete actions, or the length of a continuous action.
        discrete: whether actions are categorical.
        low: lower bound of a continuous action (the smallest over its dimensions).
        high: upper bound of a continuous action (the largest over its dimensions).

    Examples:
        >>> AgentLayout("agent_0", "agent", obs_dim=18, action_dim=5, discrete=True).action_dim
        5
    """

    name: str
    group: str
    obs_dim: int
    action_dim: int
    discrete: bool
    low: float = -1.0
    high: float = 1.0


@dataclass(frozen=True)
class GroupLayout:
    """One agent group: its agents, their observation width and their actions.

    Agents of a group share sizes and action bounds (the group's networks stack their weights).
    Discrete actions: ``n_actions`` choices per agent, taken by the env as integers or, with
    ``one_hot=True``, as one-hot vectors. Continuous actions (``continuous=True``): ``n_actions`` is
    the width of each agent's action vector, bounded by ``action_low`` and ``action_high`` (one entry
    per dimension). ``action_mask``: the env writes ``(group, "action_mask")``, ``[n_agents,
    n_actions]`` booleans that say which discrete actions are valid now (TorchRL's key; LBF's).

    Examples:
        >>> layout = GroupLayout(group="agent", agent_names=("agent_0", "agent_1"), observation_dim=18,
        ...                      n_actions=5)
        >>> layout.n_agents, layout.action_kind
        (2, 'index')
        >>> GroupLayout(group="agent", agent_names=("a",), observation_dim=4, n_actions=2,
        ...             action_mask=True).action_mask
        True
        >>> GroupLayout(group="agent", agent_names=("a",), observation_dim=4, n_actions=2,
        ...             continuous=True, action_low=(-1.0, 0.0), action_high=(1.0, 2.0)).agents[0].high
        2.0
    """

    group: str
    agent_names: tuple[str, ...]
    observation_dim: int
    n_actions: int
    continuous: bool = False
    action_low: tuple[float, ...] = ()
    action_high: tuple[float, ...] = ()
    one_hot: bool = False
    action_mask: bool = False

    def __post_init__(self) -> None:
        if self.continuous and not (
            len(self.action_low) == len(self.action_high) == self.n_actions
        ):
            raise UserError(
                f"group '{self.group}': continuous actions need action_low and action_high with "
                f"{self.n_actions} entries, got {len(self.action_low)} and {len(self.action_high)}"
            )
        if self.continuous and self.one_hot:
            raise UserError(f"group '{self.group}': actions are either continuous or one-hot")
        if self.continuous and self.action_mask:
            raise UserError(
                f"group '{self.group}': an action_mask needs discrete actions; this group's are "
                f"continuous ({self.n_actions}-dimensional)"
            )

    @property
    def n_agents(self) -> int:
        return len(self.agent_names)

    @property
    def action_kind(self) -> ActionKind:
        if self.continuous:
            return "continuous"
        return "one_hot" if self.one_hot else "index"

    @property
    def agents(self) -> tuple[AgentLayout, ...]:
        """The group's agents, in order."""
        low = min(self.action_low) if self.continuous else -1.0
        high = max(self.action_high) if self.continuous else 1.0
        return tuple(
            AgentLayout(
                name,
                self.group,
                obs_dim=self.observation_dim,
                action_dim=self.n_actions,
                discrete=not self.continuous,
                low=low,
                high=high,
            )
            for name in self.agent_names
        )


@dataclass(frozen=True)
class EnvLayout:
    """Every group of an env, and its agents in the documented flat order.

    Examples:
        >>> from marlplug.envs import make_env
        >>> layout = read_layout(make_env("predator_prey", agents=4, adversaries=1, seed=0))
        >>> [group.group for group in layout.groups], layout.num_agents
        (['agent', 'adversary'], 4)
        >>> layout.agents[3].name, layout.padded_dims()
        ('adversary_0', (16, 5))
    """

    groups: tuple[GroupLayout, ...]

    def __iter__(self) -> Iterator[GroupLayout]:
        return iter(self.groups)

    @cached_property
    def agents(self) -> tuple[AgentLayout, ...]:
        """Every agent, groups in order, agents in their group's order."""
        return tuple(agent for group in self.groups for agent in group.agents)

    @property
    def num_agents(self) -> int:
        return sum(group.n_agents for group in self.groups)

    def group(self, name: str) -> GroupLayout:
        """The group called ``name``."""
        for group in self.groups:
            if group.group == name:
                return group
        raise KeyError(f"no group '{name}'; groups: {', '.join(g.group for g in self.groups)}")

    def padded_dims(self) -> tuple[int, int]:
        """See :func:`padded_dims`."""
        return padded_dims(self.agents)


def padded_dims(agents: Sequence[AgentLayout]) -> tuple[int, int]:
    """The widest observation and action over ``agents``: every agent's tensors are padded to these.

    Examples:
        >>> padded_dims([AgentLayout("a", "g", obs_dim=4, action_dim=5, discrete=True),
        ...              AgentLayout("b", "h", obs_dim=6, action_dim=2, discrete=False)])
        (6, 5)
    """
    if not agents:
        raise ValueError("at least one agent is needed")
    return max(a.obs_dim for a in agents), max(a.action_dim for a in agents)


def _bounds(values: torch.Tensor, group: str, what: str) -> tuple[float, ...]:
    per_dimension = values.reshape(-1, values.shape[-1])
    if not torch.equal(per_dimension, per_dimension[:1].expand_as(per_dimension)):
        raise UserError(
            f"group '{group}': action {what} bounds differ between agents; not supported"
        )
    return tuple(float(v) for v in per_dimension[0])


def _has_action_mask(
    env: EnvBase, group: str, n_agents: int, n_actions: int, continuous: bool
) -> bool:
    """Whether ``group`` has an ``action_mask`` observation, checked to be one boolean per agent and
    discrete action (a mask of another shape would silently mask the wrong actions; a continuous
    group's mask is refused by :class:`GroupLayout`)."""
    mask_spec = env.observation_spec.get((group, ACTION_MASK), None)
    if mask_spec is None:
        return False
    if not continuous and tuple(mask_spec.shape[-2:]) != (n_agents, n_actions):
        raise UserError(
            f"group '{group}': action_mask of shape {tuple(mask_spec.shape)}; expected one entry "
            f"per agent and action, (..., {n_agents}, {n_actions})"
        )
    return True


def _group_layout(env: EnvBase, group: str, names: Sequence[str]) -> GroupLayout:
    observation_dim = int(env.observation_spec[group, "observation"].shape[-1])
    action_spec = env.full_action_spec[group, "action"]
    action_low: tuple[float, ...] = ()
    action_high: tuple[float, ...] = ()
    if isinstance(action_spec, OneHot):
        n_actions, one_hot, continuous = int(action_spec.shape[-1]), True, False
    elif isinstance(action_spec, Categorical) and action_spec.shape[-1:] == (len(names),):
        n_actions, one_hot, continuous = int(action_spec.space.n), False, False
    elif isinstance(action_spec, Bounded) and action_spec.domain == "continuous":
        n_actions, one_hot, continuous = int(action_spec.shape[-1]), False, True
        action_low = _bounds(action_spec.space.low, group, "low")
        action_high = _bounds(action_spec.space.high, group, "high")
    else:
        raise UserError(
            f"group '{group}': marlplug needs one categorical (index or one-hot) or bounded "
            f"continuous action per agent, got {type(action_spec).__name__} of shape "
            f"{tuple(action_spec.shape)}"
        )
    return GroupLayout(
        group=group,
        agent_names=tuple(names),
        observation_dim=observation_dim,
        n_actions=n_actions,
        continuous=continuous,
        action_low=action_low,
        action_high=action_high,
        one_hot=one_hot,
        action_mask=_has_action_mask(env, group, len(names), n_actions, continuous),
    )


def read_layout(env: EnvBase) -> EnvLayout:
    """Read every agent group's layout from a TorchRL multi-agent env (``env.group_map`` and specs).

    Raises:
        UserError: the env has no ``group_map``, or a group's actions are neither categorical nor
            bounded continuous, or its agents' action bounds differ, or its ``action_mask`` is
            not one boolean per agent and discrete action.
    """
    group_map: Mapping[str, Sequence[str]] | None = getattr(env, "group_map", None)
    if not group_map:
        raise UserError("env has no group_map; marlplug needs a multi-agent TorchRL env")
    return EnvLayout(tuple(_group_layout(env, group, names) for group, names in group_map.items()))
