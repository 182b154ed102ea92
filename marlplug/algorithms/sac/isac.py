"""ISAC: independent soft actor-critic (plugin name ``isac``), each agent's twin critics on its own
observation and action; the update is :class:`~marlplug.algorithms.sac.program.SacProgram`, which
splits by agent, so ISAC trains coded exactly as centralized."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from torchrl.envs import EnvBase

from marlplug.algorithms.sac.options import SacOptions
from marlplug.algorithms.sac.program import SacProgram
from marlplug.algorithms.spaces import AgentSpace
from marlplug.envs.flat import MultiAgentEnvAdapter
from marlplug.errors import UserError

if TYPE_CHECKING:
    from marlplug.algorithms.maddpg_data import ReplayRollouts
    from marlplug.config import MarlplugConfig

__all__ = ["ISAC", "continuous_agents"]


def continuous_agents(env: EnvBase, algorithm: str) -> list[AgentSpace]:
    """``env``'s agents, or a one-line error when one acts discretely (SAC here samples a
    TanhNormal)."""
    agents = MultiAgentEnvAdapter(env).agents
    discrete = [agent.name for agent in agents if agent.discrete]
    if discrete:
        raise UserError(
            f"algorithm.name: {algorithm} needs continuous actions, but {', '.join(discrete)} "
            f"act discretely; set env.continuous_actions: true or use maddpg, iddpg or iql"
        )
    return agents


class ISAC:
    """Independent SAC (plugin name ``isac``): per agent a TanhNormal actor, twin critics on its own
    observation and action with Polyak targets, and a learned (or fixed) entropy temperature.

    Built from its :class:`SacOptions`; :meth:`rollouts` is the replay buffer MADDPG's update
    learns from too (:class:`~marlplug.algorithms.maddpg_data.ReplayRollouts`).

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
        """The update program for these agents (in this order)."""
        return SacProgram(self.options, agents)

    def bind(self, env: EnvBase, config: MarlplugConfig | None = None) -> SacProgram:
        """The update program for ``env``'s agents (a one-line error for discrete actions)."""
        del config
        return self.program(continuous_agents(env, self._name))

    def rollouts(self, env: EnvBase, program: SacProgram, config: MarlplugConfig) -> ReplayRollouts:
        """The replay buffer filled by acting in ``env`` with the current (sampling) actors."""
        from marlplug.algorithms.maddpg_data import ReplayRollouts

        return ReplayRollouts(env, program, config)

    #: The plugin name errors use.
    _name = "isac"
