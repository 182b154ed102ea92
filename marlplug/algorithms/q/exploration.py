"""Epsilon-greedy exploration on a schedule: the replay source of the value-based family, acting
with the random-action probability that the options' linear schedule gives at the current env
step (:meth:`~marlplug.algorithms.q.options.QOptions.epsilon`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase
from torchrl.envs import EnvBase

from marlplug.algorithms.q.sequences import SequenceCollector
from marlplug.algorithms.replay import ExperienceCollector, ReplayRollouts

if TYPE_CHECKING:
    from marlplug.algorithms.q.options import QOptions
    from marlplug.algorithms.q.program import QProgram
    from marlplug.algorithms.spaces import AgentSpace
    from marlplug.config import MarlplugConfig


class ScheduledActing:
    """A :class:`~marlplug.algorithms.q.program.QProgram`'s policy with the ``epsilon`` it is set
    to (what the replay collector acts with)."""

    #: The collector passes the env's ``action_mask`` to :meth:`act`.
    reads_action_mask = True

    def __init__(self, program: QProgram) -> None:
        self.program = program
        self.agents: list[AgentSpace] = program.agents
        self.epsilon = program.options.epsilon_start

    @property
    def options(self) -> QOptions:
        return self.program.options

    def act(
        self,
        theta_all: torch.Tensor,
        obs: torch.Tensor,
        *,
        generator: torch.Generator | None = None,
        explore: bool = True,
        action_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The program's epsilon-greedy actions at this :attr:`epsilon` (among the valid ones)."""
        return self.program.act(
            theta_all,
            obs,
            generator=generator,
            explore=explore,
            epsilon=self.epsilon,
            action_mask=action_mask,
        )

    def act_recurrent(
        self,
        theta_all: torch.Tensor,
        obs: torch.Tensor,
        hidden: torch.Tensor,
        *,
        generator: torch.Generator | None = None,
        explore: bool = True,
        action_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A recurrent program's actions at this :attr:`epsilon` and its next state."""
        return self.program.act_recurrent(
            theta_all,
            obs,
            hidden,
            generator=generator,
            explore=explore,
            epsilon=self.epsilon,
            action_mask=action_mask,
        )

    def env_scale(self, actions: torch.Tensor) -> torch.Tensor:
        return self.program.env_scale(actions)


class EpsilonGreedyRollouts(ReplayRollouts):
    """:class:`~marlplug.algorithms.replay.ReplayRollouts` whose every iteration acts with
    the schedule's epsilon at the env steps taken before it (a function of the restored step count,
    so a resumed run explores as the one never stopped).

    Examples:
        >>> from marlplug import load_config
        >>> from marlplug.algorithms.q import IQL
        >>> from marlplug.envs import make_env
        >>> config = load_config(data={"algorithm": {"name": "iql", "epsilon_decay_steps": 10,
        ...     "steps_per_iteration": 5, "learning_starts": 5, "minibatch_size": 4}})
        >>> env = make_env("cooperative_navigation", agents=2, seed=0)
        >>> algorithm = IQL(**config.algorithm.options.model_dump())
        >>> program = algorithm.bind(env, config)
        >>> source = algorithm.rollouts(env, program, config)
        >>> theta, _ = program.init_state(0)
        >>> [(len(list(source.batches(theta, i))), source.iteration_stats()["epsilon"])
        ...  for i in range(3)]
        [(1, 1.0), (1, 0.525), (1, 0.05)]
    """

    def __init__(self, env: EnvBase, program: QProgram, config: MarlplugConfig) -> None:
        self.acting = ScheduledActing(program)
        # A recurrent program replays chunks of steps (marlplug.algorithms.q.sequences).
        self.collector_class: type[ExperienceCollector] = (
            ExperienceCollector if program.recurrent is None else SequenceCollector
        )
        super().__init__(env, self.acting, config)

    def batches(self, theta_all: torch.Tensor, iteration: int) -> Iterator[TensorDictBase]:
        """Set this iteration's epsilon, then collect and sample as the replay source does."""
        self.acting.epsilon = self.acting.options.epsilon(self.env_steps)
        yield from super().batches(theta_all, iteration)

    def iteration_stats(self) -> Mapping[str, Any]:
        """The replay source's statistics and the ``epsilon`` the iteration acted with."""
        return {**super().iteration_stats(), "epsilon": self.acting.epsilon}
