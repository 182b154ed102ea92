"""MADDPG driven by a program and an updater instead of a config (``bench parity``, fault tests):
:class:`MaddpgRunner` is :class:`~marlplug.train.loop.Training` with the replay source of
:mod:`marlplug.train.legacy` and an :class:`Updater` on the pre-Protocol ``[M, D]`` rows.

:class:`CentralizedUpdater` evaluates every ``U_i`` in this process;
:class:`~marlplug.distributed.controller.CodedController` evaluates them on learners and decodes. With the
same seed both give the same learning curve. Goes once the controller takes a
:class:`~marlplug.algorithms.protocol.LearnerProgram` (then use :mod:`marlplug.train.executors`).
"""

from __future__ import annotations

from typing import Any, Protocol

import torch
from tensordict import TensorDictBase
from torchrl.envs import EnvBase

from marlplug.algorithms.maddpg import MaddpgProgram
from marlplug.distributed.controller import RoundLog
from marlplug.runs.iteration_report import IterationLog
from marlplug.seeding import agent_seed
from marlplug.train.executors import RoundResult
from marlplug.train.legacy import LegacyProgram, ReplaySource
from marlplug.train.loop import Training


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


class _UpdaterExecutor:
    """An :class:`Updater` (the pre-Protocol ``[M, D]`` rows) as a round executor."""

    def __init__(self, updater: Updater) -> None:
        self.updater = updater

    def update(
        self, theta: torch.Tensor, opt_state: torch.Tensor, batch: TensorDictBase, round_index: int
    ) -> RoundResult:
        new_theta, log = self.updater.update(theta, batch, round_index)
        return RoundResult(new_theta, opt_state, {}, log)

    def skip_rounds(self, rounds: int) -> None:
        skip_rounds = getattr(self.updater, "skip_rounds", None)
        if skip_rounds is not None:  # a coded controller (a centralized updater has no stragglers)
            skip_rounds(rounds)

    def close(self) -> None:
        """The caller owns the updater."""


class MaddpgRunner:
    """Runs MADDPG iterations with a given updater: :class:`~marlplug.train.loop.Training` over the
    replay source of :mod:`marlplug.train.legacy`, for callers that hold a program and an updater
    rather than a config (:func:`marlplug.train.orchestrator.run` takes a config).

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
        legacy = LegacyProgram(program)
        source = ReplaySource(env, legacy, seed)
        self.collector = source.collector
        self.training = Training(
            legacy,
            source,
            _UpdaterExecutor(updater),
            agent_names=[agent.name for agent in program.agents],
            seed=seed,
        )

    @property
    def theta(self) -> torch.Tensor:
        """Every agent's state row (see :attr:`MaddpgProgram.codec`)."""
        return self.training.theta

    @property
    def rounds(self) -> int:
        return self.training.rounds

    @property
    def env_steps(self) -> int:
        return self.training.env_steps

    @property
    def iterations(self) -> int:
        return self.training.iterations

    def run(self, iterations: int) -> list[IterationLog]:
        """Run ``iterations`` more iterations and return their logs."""
        return [self.step() for _ in range(iterations)]

    def step(self) -> IterationLog:
        """One iteration: collect ``steps_per_iteration`` env steps, then one update round once the
        replay buffer holds enough transitions."""
        return self.training.step()

    def state_dict(self) -> dict[str, Any]:
        return self.training.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.training.load_state_dict(state)
