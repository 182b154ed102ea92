"""Helpers for coded-round tests: a small MADDPG program, a minibatch, the centralized reference."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from marlplug.algorithms.maddpg import MADDPG
from marlplug.algorithms.row_bridge import MaddpgRows
from marlplug.algorithms.spaces import AgentSpace
from marlplug.seeding import agent_seed


def small_program(num_agents: int) -> MaddpgRows:
    agents = [
        AgentSpace(f"agent_{i}", "agent", obs_dim=6, action_dim=5, discrete=True)
        for i in range(num_agents)
    ]
    return MaddpgRows(MADDPG(hidden_sizes=[16, 16], minibatch_size=32).program(agents))


def small_batch(program: MaddpgRows, seed: int = 0) -> TensorDict:
    generator = torch.Generator().manual_seed(seed)
    size, m = 32, program.num_agents
    obs = torch.randn(size, m, program.obs_dim, generator=generator)
    return TensorDict(
        obs=obs,
        action=program.act(program.init_state(seed), obs, generator=generator),
        reward=torch.randn(size, m, generator=generator),
        next_obs=torch.randn(size, m, program.obs_dim, generator=generator),
        terminated=torch.zeros(size, m, dtype=torch.bool),
        batch_size=[size],
    )


def centralized(
    program: MaddpgRows, theta: torch.Tensor, batch: TensorDict, round_index: int, seed: int = 0
) -> torch.Tensor:
    agents = list(range(program.num_agents))
    return program.update(theta, agents, batch, [agent_seed(seed, round_index, i) for i in agents])


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    return float((actual.double() - expected.double()).norm() / expected.double().norm())
