"""A bridge for off-policy algorithms written to the pre-Protocol contract (``maddpg`` and plugins
such as the documented ``linear_iql``): ``bind(agents)`` and a program with ``act``, ``env_scale``
and ``update(theta_all, agents, batch, seeds) -> [S, D]`` over one row holding weights and
optimizer state.

:func:`as_learner_algorithm` presents such an algorithm through
:class:`~marlplug.algorithms.protocol.LearnerAlgorithm`: ``theta`` is the old row, ``opt_state``
is empty (``O = 0``), and the rollouts are the replay buffer of
:class:`~marlplug.algorithms.maddpg_data.ExperienceCollector` (act for ``steps_per_iteration``
steps, then one minibatch once the buffer holds enough). It goes once every algorithm implements
``bind(env, config)`` and ``rollouts`` itself; the orchestrator then uses the algorithm directly.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from torchrl.envs import EnvBase

from marlplug.algorithms.env_adapter import MultiAgentEnvAdapter
from marlplug.algorithms.maddpg_data import ExperienceCollector
from marlplug.algorithms.protocol import AgentUpdate, LearnerAlgorithm, RolloutSource
from marlplug.config import MarlplugConfig
from marlplug.runs.iteration_report import learning_gate_note
from marlplug.seeding import derive_seed


def binds_agents(algorithm: Any) -> bool:
    """Whether ``algorithm`` follows the pre-Protocol contract: ``bind`` takes the agents alone."""
    bind = getattr(algorithm, "bind", None)
    return bind is not None and len(inspect.signature(bind).parameters) == 1


def as_learner_algorithm(algorithm: Any) -> LearnerAlgorithm:
    """``algorithm`` itself, or the bridge when it follows the pre-Protocol contract."""
    return LegacyOffPolicy(algorithm) if binds_agents(algorithm) else algorithm


class LegacyProgram:
    """An old off-policy program as a :class:`~marlplug.algorithms.protocol.LearnerProgram`.

    Agent ``i``'s random numbers in a round seeded ``seed`` come from ``derive_seed(seed, i)``,
    whichever other agents share the call.
    """

    def __init__(self, program: Any) -> None:
        self.inner = program
        self.agents = program.agents
        self.num_agents = program.num_agents
        self.theta_size = program.state_size
        self.opt_state_size = 0

    def init_state(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.inner.init_state(seed), torch.zeros(self.num_agents, 0)

    def update(
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        batch: TensorDictBase,
        agents: Sequence[int],
        seed: int,
    ) -> AgentUpdate:
        seeds = [derive_seed(seed, agent) for agent in agents]
        theta = self.inner.update(theta_all, list(agents), batch, seeds)
        return AgentUpdate(theta, opt_state[list(agents)])


class ReplaySource:
    """Replay-buffer rollouts of an old off-policy program: per iteration, act for
    ``steps_per_iteration`` steps, then yield one minibatch once the buffer holds enough."""

    def __init__(self, env: EnvBase, program: LegacyProgram, seed: int) -> None:
        self.collector = ExperienceCollector(env, program.inner, seed=seed)
        self.sampler = torch.Generator().manual_seed(seed + 1)
        self.steps = program.inner.options.steps_per_iteration
        self.env_steps = 0
        self._stats: dict[str, Any] = {}

    def batches(self, theta_all: torch.Tensor, iteration: int) -> Iterator[TensorDictBase]:
        seen = len(self.collector.episode_returns)
        start = time.perf_counter()
        self.collector.collect(theta_all, self.steps)
        self.env_steps += self.steps * self.collector.adapter.num_envs
        finished = self.collector.episode_returns[seen:]
        self._stats = {
            "env_steps": self.env_steps,
            "episode_return": sum(finished) / len(finished) if finished else math.nan,
            "collect_s": time.perf_counter() - start,
        }
        if self.collector.ready():
            yield self.collector.sample(self.sampler)

    def sync(self, theta_all: torch.Tensor) -> None:
        """Nothing to do: the next iteration acts with the ``theta`` it is given."""

    def iteration_stats(self) -> Mapping[str, Any]:
        return self._stats

    def waiting_note(self, iterations_done: int, *, coded: bool) -> str | None:
        """Why the next iteration only collects (no minibatch yet), or ``None`` when it learns."""
        first = self.collector.first_learning_iteration()
        if first is not None and first <= iterations_done + 1:
            return None
        return learning_gate_note(self.collector, coded=coded)

    def never_learned_note(self, *, coded: bool) -> str:
        """What a run that ended before its first round is told."""
        return learning_gate_note(self.collector, coded=coded)

    def state_dict(self) -> dict[str, Any]:
        return {
            "env_steps": self.env_steps,
            "sampler": self.sampler.get_state(),
            "collector": self.collector.state_dict(),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.env_steps = int(state["env_steps"])
        self.sampler.set_state(state["sampler"])
        self.collector.load_state_dict(dict(state["collector"]))

    def close(self) -> None:
        self.collector.env.close()


class LegacyOffPolicy:
    """A pre-Protocol off-policy algorithm as a :class:`LearnerAlgorithm` (see the module doc)."""

    def __init__(self, algorithm: Any) -> None:
        self.algorithm = algorithm

    def bind(self, env: EnvBase, config: MarlplugConfig) -> LegacyProgram:
        return LegacyProgram(self.algorithm.bind(MultiAgentEnvAdapter(env).agents))

    def rollouts(self, env: EnvBase, program: Any, config: MarlplugConfig) -> RolloutSource:
        return ReplaySource(env, program, config.seed)
