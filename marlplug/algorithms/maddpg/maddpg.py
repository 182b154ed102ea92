"""MADDPG as in the coded-MARL paper: a deterministic actor and a centralized critic per agent.

This module holds the algorithm plugin (:class:`MADDPG`); its hyperparameters are
:class:`~marlplug.algorithms.maddpg.options.MaddpgOptions`, the update rule
:class:`~marlplug.algorithms.maddpg.program.MaddpgProgram`, the replay buffer
:mod:`marlplug.algorithms.replay`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from torchrl.envs import EnvBase

from marlplug.algorithms.maddpg.options import MaddpgOptions
from marlplug.algorithms.maddpg.program import MaddpgProgram
from marlplug.algorithms.replay import BATCH_KEYS
from marlplug.algorithms.spaces import AgentSpace
from marlplug.envs.flat import MultiAgentEnvAdapter

if TYPE_CHECKING:
    from marlplug.algorithms.replay import ReplayRollouts
    from marlplug.config import MarlplugConfig

__all__ = ["BATCH_KEYS", "MADDPG", "MaddpgProgram"]


class MADDPG:
    """The MADDPG learner algorithm (plugin name ``maddpg``).

    Built from its :class:`MaddpgOptions` (their one declaration). :meth:`bind` fixes the agents and returns the :class:`MaddpgProgram` that holds the pure
    per-agent update; :meth:`rollouts` the replay buffer it learns from.

    Examples:
        >>> algo = MADDPG(**MaddpgOptions(minibatch_size=8).model_dump())
        >>> agents = [AgentSpace(f"agent_{i}", "agent", obs_dim=6, action_dim=5, discrete=True)
        ...           for i in range(3)]
        >>> program = algo.program(agents)
        >>> theta, opt_state = program.init_state(seed=0)
        >>> theta.shape == (3, program.theta_size), opt_state.shape == (3, program.opt_state_size)
        (True, True)
    """

    Options = MaddpgOptions

    def __init__(self, **options: Any) -> None:
        # Every hyperparameter is declared once, in MaddpgOptions (validated here too).
        self.options = MaddpgOptions(**options)

    def program(self, agents: Sequence[AgentSpace]) -> MaddpgProgram:
        """The update program for these agents (in this order)."""
        return MaddpgProgram(self.options, agents)

    def bind(self, env: EnvBase, config: MarlplugConfig | None = None) -> MaddpgProgram:
        """The update program for ``env``'s agents (MADDPG reads its own options, not ``config``)."""
        del config
        return self.program(MultiAgentEnvAdapter(env).agents)

    def rollouts(
        self, env: EnvBase, program: MaddpgProgram, config: MarlplugConfig
    ) -> ReplayRollouts:
        """The replay buffer filled by acting in ``env`` with the current actors."""
        from marlplug.algorithms.replay import ReplayRollouts

        return ReplayRollouts(env, program, config)
