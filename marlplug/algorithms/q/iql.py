"""IQL: independent Q-learning, each agent a Q-network on its own observation and reward (plugin
name ``iql``); the update is :class:`~marlplug.algorithms.q.program.QProgram` without a mixer, so
it splits by agent and trains coded exactly as centralized."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from torchrl.envs import EnvBase

from marlplug.algorithms.q.exploration import EpsilonGreedyRollouts
from marlplug.algorithms.q.options import QOptions
from marlplug.algorithms.q.program import QProgram
from marlplug.algorithms.spaces import AgentSpace
from marlplug.envs.flat import MultiAgentEnvAdapter
from marlplug.errors import UserError

if TYPE_CHECKING:
    from marlplug.config import MarlplugConfig

__all__ = ["IQL", "discrete_agents"]


def discrete_agents(env: EnvBase, algorithm: str) -> list[AgentSpace]:
    """``env``'s agents, or a one-line error when one acts continuously (Q-learning picks among
    discrete actions)."""
    agents = MultiAgentEnvAdapter(env).agents
    continuous = [agent.name for agent in agents if not agent.discrete]
    if continuous:
        raise UserError(
            f"algorithm.name: {algorithm} needs discrete actions, but {', '.join(continuous)} "
            f"act continuously; set env.continuous_actions: false or use maddpg or iddpg"
        )
    return agents


class IQL:
    """Independent Q-learning (plugin name ``iql``): each agent's own Q-network and TD target.

    Per-agent stacked Q-networks, epsilon-greedy exploration on a linear schedule, replay and
    target networks (:class:`QOptions`).

    Examples:
        >>> algo = IQL(hidden_sizes=[8])
        >>> agents = [AgentSpace(f"agent_{i}", "agent", obs_dim=6, action_dim=5, discrete=True)
        ...           for i in range(3)]
        >>> theta, opt_state = algo.program(agents).init_state(seed=0)
        >>> theta.shape[0], opt_state.shape[0]
        (3, 3)
    """

    Options = QOptions

    def __init__(self, **options: Any) -> None:
        # Every hyperparameter is declared once, in QOptions (validated here too).
        self.options = QOptions(**options)

    def program(self, agents: Sequence[AgentSpace]) -> QProgram:
        """The update program for these agents (in this order)."""
        return QProgram(self.options, agents)

    def bind(self, env: EnvBase, config: MarlplugConfig | None = None) -> QProgram:
        """The update program for ``env``'s agents (a one-line error for continuous actions)."""
        del config
        return self.attached(self.program(discrete_agents(env, "iql")), env)

    @staticmethod
    def attached(program: QProgram, env: EnvBase) -> QProgram:
        """``program`` with its tensordict policy for ``env`` where it is recurrent (what
        evaluation acts with: the state carried in the tensordict)."""
        program.attach_policy(MultiAgentEnvAdapter(env))
        return program

    def rollouts(
        self, env: EnvBase, program: QProgram, config: MarlplugConfig
    ) -> EpsilonGreedyRollouts:
        """The replay buffer, filled by acting epsilon-greedily in ``env``."""
        return EpsilonGreedyRollouts(env, program, config)
