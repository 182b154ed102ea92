"""The settings ``marlplug bench coding`` times (:mod:`marlplug.bench.coded_rounds`): a scenario with M
agents and its straggler counts (:class:`Setting`), and its MADDPG program with data to sample,
warmed up (:func:`warmed_up`), so that the first timed round pays no first-call costs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from marlplug.algorithms.maddpg import MADDPG
from marlplug.algorithms.protocol import LearnerProgram
from marlplug.algorithms.replay import ExperienceCollector
from marlplug.distributed.learner import learner_compute, state_rows
from marlplug.envs.flat import MultiAgentEnvAdapter
from marlplug.errors import UserError
from marlplug.seeding import derive_seed

#: Mixed into the seed of the warm-up's minibatch, apart from the rounds' sampler.
_WARM_UP = 11


@dataclass
class Setting:
    """One bar group: a scenario with M agents, and its straggler counts and delay."""

    scenario: str
    agents: int
    stragglers: tuple[int, ...]
    delay_s: float
    adversaries: int


@dataclass
class Warm:
    """A setting ready to time: its learner program, a collector whose replay buffer can serve a
    minibatch, and the agents' state rows."""

    program: LearnerProgram
    collector: ExperienceCollector
    theta: torch.Tensor
    opt_state: torch.Tensor
    steps: int

    def minibatch(self, sampler: torch.Generator) -> tuple[Any, float]:
        """Take the iteration's env steps and sample a minibatch: ``(batch, seconds)``."""
        start = time.perf_counter()
        self.collector.collect(self.theta, self.steps)
        return self.collector.sample(sampler), time.perf_counter() - start


def warmed_up(
    setting: Setting, env_backend: str, seed: int, algorithm_options: dict[str, Any]
) -> Warm:
    """The setting's MADDPG program and data, after one iteration's env steps and one update.

    A minibatch is drawn with replacement, so one iteration's transitions can serve it: the update
    costs the same as on a full buffer (at M = 32 on vmas, filling the buffer with ``minibatch_size``
    transitions first took minutes). The update is timed nowhere; it takes the first call's costs
    out of the first round.

    A timed round is one iteration: ``steps_per_iteration`` env steps, then one update. An
    ``updates_per_iteration`` other than 1 in ``algorithm_options`` (MADDPG's default is 1) would
    charge every round an iteration's env steps, so it is refused.
    """
    from marlplug.envs import make_env

    updates = algorithm_options.get("updates_per_iteration", 1)
    if updates != 1:
        raise UserError(
            f"bench coding: algorithm updates_per_iteration={updates}; a timed round is one "
            "iteration of one update (updates_per_iteration 1)"
        )

    env_options: dict[str, Any] = {"agents": setting.agents}
    if setting.adversaries:
        env_options["adversaries"] = setting.adversaries
    env = make_env(setting.scenario, backend=env_backend, seed=seed, **env_options)
    program = MADDPG(**algorithm_options).program(MultiAgentEnvAdapter(env).agents)
    theta, opt_state = program.init_state(seed)
    warm = Warm(
        program,
        ExperienceCollector(env, program, seed=seed),
        theta,
        opt_state,
        program.options.steps_per_iteration,
    )
    batch, _ = warm.minibatch(torch.Generator().manual_seed(derive_seed(seed, _WARM_UP)))
    one_agent = np.eye(1, program.num_agents).ravel()
    learner_compute(program, one_agent, state_rows(theta, opt_state), batch, seed=seed)
    return warm
