"""Coded PPO where agents die (MAgent2 battle, issue 45): on minibatches with dead agents' rows
masked out of the PPO terms, the observation statistics and the redundancy penalty, the decoded
rounds track the centralized update, for a dense code (every learner updates every agent) and a
sparse one (each learner a few agents, so the masked terms are split across learners)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDictBase

from marlplug.algorithms.ppo import PPO
from marlplug.algorithms.ppo.program import PpoProgram
from marlplug.algorithms.protocol import AgentUpdate
from marlplug.coding.stragglers import StragglerModel
from marlplug.config import load_config
from marlplug.distributed.controller import CodedController
from marlplug.envs import make_env
from tests.algorithms.test_ppo_dead_agents import BATTLE, _fight
from tests.distributed.helpers import centralized, state_error
from tests.distributed.test_exactness import scheme_matrix
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)

pytest.importorskip("magent2")

#: 6 agents a side.
AGENTS = 12


@pytest.fixture(scope="module")
def minibatches() -> tuple[list[tuple[TensorDictBase, int]], PpoProgram]:
    """Two epochs of 35-row minibatches of a scripted fight in which agents die, from a PPO program
    with obs_norm and the redundancy penalty (GAE and the observation statistics from its own
    critics and rollout)."""
    _, rollout = _fight(70)
    config = load_config(
        data={
            "env": {**BATTLE, "max_steps": 70},
            "algorithm": {
                "name": "ppo",
                "hidden_size": 16,
                "feature_dim": 8,
                "share_params": True,
                "obs_norm": True,
            },
            "losses": [{"name": "redundancy", "coef": 0.5}],
            "train": {"rollout_steps": 70, "minibatch_size": 35, "n_epochs": 2},
        }
    )
    env = make_env("battle", backend="pettingzoo", map_size=16, max_steps=70, seed=0)
    algorithm = PPO(hidden_size=16, feature_dim=8, share_params=True, obs_norm=True)
    program = algorithm.bind(env, config)
    source = algorithm.rollouts(env, program, config)
    try:
        batches = list(source.minibatches(rollout.clone(), 0))
    finally:
        source.close()
    return batches, program


@pytest.mark.parametrize("name", ["mds", "replication"])
def test_coded_rounds_with_dead_agents_track_the_centralized_update(
    minibatches: tuple[list[tuple[TensorDictBase, int]], PpoProgram], name: str
) -> None:
    batches, program = minibatches
    assert len(batches) == 4
    # Every minibatch holds rows of dead agents.
    for batch, _ in batches:
        alive = torch.cat([batch.get((g, "mask")) for g in ("red", "blue")], dim=-1)
        assert not bool(alive.all())
    scheme, matrix = scheme_matrix(name, AGENTS, 2 * AGENTS)
    controller = CodedController(
        program,
        matrix,
        None,
        scheme=scheme,
        stragglers=StragglerModel(count=2, delay_s=1.0, seed=3),
        clock="simulated",
    )
    theta, opt_state = program.init_state(0)
    start = theta.clone()
    reference = AgentUpdate(theta, opt_state)
    for round_index, (batch, seed) in enumerate(batches):
        coded, _ = controller.update(theta, opt_state, batch, round_index, seed=seed)
        reference = centralized(
            program,
            reference.theta,
            reference.opt_state,
            batch,
            seed,
        )
        assert state_error(coded, reference) <= 1e-6, round_index
        for stat in ("policy_loss", "value_loss"):
            assert torch.allclose(coded.stats[stat], reference.stats[stat], rtol=1e-5, atol=1e-7)
        theta, opt_state = coded.theta, coded.opt_state
    assert not torch.allclose(theta, start)  # the rounds moved the weights
