"""The MADDPG training loop shared by centralized and coded runs: per iteration, act in the env for
``steps_per_iteration`` steps, then one update round on a seeded minibatch.

Only the updater differs: :class:`CentralizedUpdater` evaluates every ``U_i`` in this process;
:class:`~marlplug.distributed.controller.CodedController` evaluates them on learners and decodes. With the
same seed both give the same learning curve.
"""

from __future__ import annotations

import math
import time
from typing import Any, Protocol

import torch
from tensordict import TensorDictBase
from torchrl.envs import EnvBase

from marlplug.algorithms.maddpg import MaddpgProgram
from marlplug.algorithms.maddpg_data import ExperienceCollector
from marlplug.distributed.controller import RoundLog
from marlplug.errors import UserError
from marlplug.runs.iteration_report import IterationLog
from marlplug.seeding import agent_seed


class Updater(Protocol):
    """Turns ``θ`` and a minibatch into ``θ'`` for one round."""

    def update(
        self, theta_all: torch.Tensor, batch: TensorDictBase, round_index: int
    ) -> tuple[torch.Tensor, RoundLog | None]: ...


class CentralizedUpdater:
    """All ``U_i`` in one process, one vectorized call: the reference a coded run must match.

    Examples:
        >>> updater = CentralizedUpdater(program, seed=0)  # doctest: +SKIP
    """

    def __init__(self, program: MaddpgProgram, *, seed: int) -> None:
        self.program = program
        self.seed = seed

    def update(
        self, theta_all: torch.Tensor, batch: TensorDictBase, round_index: int
    ) -> tuple[torch.Tensor, RoundLog | None]:
        agents = list(range(self.program.num_agents))
        seeds = [agent_seed(self.seed, round_index, i) for i in agents]
        return self.program.update(theta_all, agents, batch, seeds), None


class MaddpgRunner:
    """Runs MADDPG iterations with a given updater.

    Args:
        env: the multi-agent env.
        program: the bound MADDPG program.
        updater: centralized or coded.
        seed: seeds initialization, exploration and minibatch sampling.

    Examples:
        >>> runner = MaddpgRunner(env, program, CentralizedUpdater(program, seed=0), seed=0)  # doctest: +SKIP
        >>> logs = runner.run(iterations=3)  # doctest: +SKIP
    """

    def __init__(
        self, env: EnvBase, program: MaddpgProgram, updater: Updater, *, seed: int
    ) -> None:
        self.program = program
        self.updater = updater
        self.collector = ExperienceCollector(env, program, seed=seed)
        self.theta = program.init_state(seed)
        self.sampler = torch.Generator().manual_seed(seed + 1)
        self.rounds = 0
        self.env_steps = 0
        self.iterations = 0

    def run(self, iterations: int) -> list[IterationLog]:
        """Run ``iterations`` more iterations and return their logs."""
        return [self.step() for _ in range(iterations)]

    def step(self) -> IterationLog:
        """One iteration: collect ``steps_per_iteration`` env steps, then one update round once the
        replay buffer holds enough transitions."""
        steps = self.program.options.steps_per_iteration
        seen = len(self.collector.episode_returns)
        start = time.perf_counter()
        self.collector.collect(self.theta, steps)
        self.env_steps += steps * self.collector.adapter.num_envs
        collect_s = time.perf_counter() - start
        round_log = None
        start = time.perf_counter()
        if self.collector.ready():
            batch = self.collector.sample(self.sampler)
            self.theta, round_log = self.updater.update(self.theta, batch, self.rounds)
            self.rounds += 1
        update_s = time.perf_counter() - start
        finished = self.collector.episode_returns[seen:]
        episode_return = sum(finished) / len(finished) if finished else math.nan
        log = IterationLog(
            self.iterations, self.env_steps, episode_return, collect_s, update_s, round_log
        )
        self.iterations += 1
        return log

    def state_dict(self) -> dict[str, Any]:
        """θ (every agent's flat state, see :attr:`MaddpgProgram.codec`), the counters, the sampler
        and the collector (replay buffer, exploration RNG, env position)."""
        return {
            "theta": self.theta.clone(),
            "rounds": self.rounds,
            "env_steps": self.env_steps,
            "iterations": self.iterations,
            "sampler": self.sampler.get_state(),
            "collector": self.collector.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict`'s output.

        A coded run's straggler model draws once per round from its own stream; that stream is moved
        forward by the rounds already run, so the resumed run sees the same stragglers.
        """
        if state["theta"].shape != self.theta.shape:
            raise UserError(
                f"--resume: the checkpoint holds agent states of shape {tuple(state['theta'].shape)}, "
                f"this config builds {tuple(self.theta.shape)}; was the env or algorithm changed?"
            )
        self.theta = state["theta"].clone()
        self.rounds = int(state["rounds"])
        self.env_steps = int(state["env_steps"])
        self.iterations = int(state["iterations"])
        self.sampler.set_state(state["sampler"])
        self.collector.load_state_dict(state["collector"])
        skip_rounds = getattr(self.updater, "skip_rounds", None)
        if skip_rounds is not None:  # a coded controller (a centralized updater has no stragglers)
            skip_rounds(self.rounds)
