"""MADDPG's update program on the learner contract (:mod:`marlplug.algorithms.protocol`).

Transitional: today's ``MaddpgProgram.update(theta_all, agents, batch, seeds)`` keeps its Adam
moments inside its one flat state row; :func:`on_contract` serves it as a
:class:`~marlplug.algorithms.protocol.LearnerProgram` with ``opt_state`` of width 0, and passes a
program that already meets the contract through unchanged. Delete this module once MADDPG's program
implements the contract itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase

from marlplug.algorithms.protocol import AgentUpdate, LearnerProgram
from marlplug.seeding import agent_seed


class MaddpgOnContract:
    """``program`` (a ``MaddpgProgram``) through ``update(theta_all, opt_state, batch, agents, seed)``.

    Agent ``i`` gets the seed ``agent_seed(seed, 0, i)``: it depends on the round's seed and the
    agent only, as the contract asks.
    """

    def __init__(self, program: Any) -> None:
        self.inner = program
        self.num_agents: int = program.num_agents
        self.theta_size: int = program.state_size
        self.opt_state_size = 0

    def init_state(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        theta = self.inner.init_state(seed)
        return theta, theta.new_zeros(self.num_agents, 0)

    def update(
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        batch: TensorDictBase,
        agents: Sequence[int],
        seed: int,
    ) -> AgentUpdate:
        chosen = [int(i) for i in agents]
        seeds = [agent_seed(seed, 0, i) for i in chosen]
        return AgentUpdate(self.inner.update(theta_all, chosen, batch, seeds), opt_state[chosen])


def on_contract(program: Any) -> LearnerProgram:
    """``program`` if it meets the learner contract, else :class:`MaddpgOnContract` around it."""
    if isinstance(program, LearnerProgram):
        return program
    return MaddpgOnContract(program)
