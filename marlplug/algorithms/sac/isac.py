"""ISAC: independent soft actor-critic (plugin name ``isac``), each agent's twin critics on its own
observation and action; the update is :class:`~marlplug.algorithms.sac.program.SacProgram`
(:class:`~marlplug.algorithms.sac.discrete.DiscreteSacProgram` for discrete actions), which splits
by agent, so ISAC trains coded exactly as centralized."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from torchrl.envs import EnvBase

from marlplug.algorithms.sac.discrete import DiscreteSacProgram
from marlplug.algorithms.sac.options import SacOptions
from marlplug.algorithms.sac.program import SacProgram
from marlplug.algorithms.spaces import AgentSpace
from marlplug.envs.flat import MultiAgentEnvAdapter
from marlplug.errors import UserError

if TYPE_CHECKING:
    from marlplug.algorithms.replay import ReplayRollouts
    from marlplug.config import MarlplugConfig

__all__ = ["ISAC", "one_action_kind"]


def one_action_kind(env: EnvBase, algorithm: str) -> list[AgentSpace]:
    """``env``'s agents, or a one-line error when some act discretely and others continuously
    (one program samples either TanhNormal or categorical policies)."""
    agents = MultiAgentEnvAdapter(env).agents
    discrete = [agent.name for agent in agents if agent.discrete]
    if discrete and len(discrete) < len(agents):
        continuous = [agent.name for agent in agents if not agent.discrete]
        raise UserError(
            f"algorithm.name: {algorithm} needs one action kind, but {', '.join(discrete)} act "
            f"discretely and {', '.join(continuous)} continuously; use maddpg or iddpg"
        )
    return agents


class ISAC:
    """Independent SAC (plugin name ``isac``): per agent a TanhNormal actor (a categorical one for
    discrete actions), twin critics on its own observation (and action) with Polyak targets, and a
    learned (or fixed) entropy temperature.

    Built from its :class:`SacOptions`; :meth:`rollouts` is the replay buffer MADDPG's update
    learns from too (:class:`~marlplug.algorithms.replay.ReplayRollouts`).

    Examples:
        >>> algo = ISAC(hidden_sizes=[8])
        >>> agents = [AgentSpace(f"agent_{i}", "agent", obs_dim=6, action_dim=2, discrete=False,
        ...                      low=-1.0, high=1.0) for i in range(3)]
        >>> program = algo.program(agents)
        >>> program.critic_sizes[0]  # one agent's observation and action
        8
    """

    Options = SacOptions

    def __init__(self, **options: Any) -> None:
        # Every hyperparameter is declared once, in the Options (validated here too).
        self.options = self.Options(**options)

    def program(self, agents: Sequence[AgentSpace]) -> SacProgram:
        """The update program for these agents (in this order): TanhNormal actors for continuous
        actions, categorical ones (:class:`DiscreteSacProgram`) for discrete actions."""
        if agents and all(agent.discrete for agent in agents):
            return DiscreteSacProgram(self.options, agents)
        return SacProgram(self.options, agents)

    def bind(self, env: EnvBase, config: MarlplugConfig | None = None) -> SacProgram:
        """The update program for ``env``'s agents (a one-line error for mixed action kinds)."""
        del config
        return self.program(one_action_kind(env, self._name))

    def rollouts(self, env: EnvBase, program: SacProgram, config: MarlplugConfig) -> ReplayRollouts:
        """The replay buffer filled by acting in ``env`` with the current (sampling) actors."""
        from marlplug.algorithms.replay import ReplayRollouts

        return ReplayRollouts(env, program, config)

    #: The plugin name errors use.
    _name = "isac"
