"""Coded training with continuous actions ends bit for bit where the centralized run ends: joint PPO
(a TanhNormal policy, its entropy a sampled estimate) and MADDPG (a tanh actor with Gaussian
exploration noise). Every round draws its samples from the round's seed, and the learners' rows
decode exactly (:mod:`marlplug.coding.exact`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from marlplug import load_config
from marlplug.envs import available_envs
from marlplug.train.orchestrator import run
from marlplug.train.run import run_training

# 2 updates of 20 frames in minibatches of 10: 2 coded rounds per update; an entropy bonus, so
# the TanhNormal's sampled entropy is in every gradient.
SMALL = [
    "algorithm.hidden_size=16",
    "algorithm.feature_dim=16",
    "algorithm.ent_coef=0.05",
    "train.updates=2",
    "train.rollout_steps=20",
    "train.minibatch_size=10",
    "train.n_epochs=1",
    "logging.progress=false",
]
CODED = [
    "coding.scheme=mds",
    "coding.learners=5",
    "coding.backend=local",
    "coding.stragglers.count=1",
    "coding.stragglers.delay_s=0.05",
]
ENVS = {
    # mpe2's continuous actions: a 5-vector in [0, 1] per agent.
    "mpe": [
        "env.name=cooperative_navigation",
        "env.agents=3",
        "env.continuous_actions=true",
        "env.max_steps=10",
    ],
    # VMAS's native force in [-1, 1]^2, 3 agents.
    "vmas": ["env.backend=vmas", "env.name=balance", "env.agents=3", "env.max_steps=10"],
}


@pytest.mark.parametrize("backend", list(ENVS))
def test_coded_continuous_ppo_ends_bit_identical_to_centralized(
    tmp_path: Path, backend: str
) -> None:
    if backend not in available_envs():
        pytest.skip(f"the {backend} backend is not installed")
    options = [*SMALL, *ENVS[backend], f"logging.dir={tmp_path}"]
    centralized = run_training(load_config(data={}, overrides=options))
    coded = run_training(load_config(data={}, overrides=[*options, *CODED]))
    assert sum(log.rounds for log in coded.iterations) == 4
    assert coded.theta.shape == centralized.theta.shape
    assert torch.equal(coded.theta, centralized.theta)
    assert torch.equal(coded.opt_state, centralized.opt_state)
    # The second update moved the weights: equal runs that did nothing would not pass.
    first = run_training(load_config(data={}, overrides=[*options, "train.updates=1"]))
    assert not torch.equal(first.theta, centralized.theta)
    for ours, theirs in zip(coded.iterations, centralized.iterations, strict=True):
        assert ours.stats["agent_0/entropy"] == theirs.stats["agent_0/entropy"]


# MADDPG: 25-step iterations, updates from the third on (learning_starts 50).
MADDPG = [
    "algorithm.name=maddpg",
    "algorithm.minibatch_size=32",
    "algorithm.learning_starts=50",
    "algorithm.steps_per_iteration=25",
    "algorithm.episode_length=25",
    "algorithm.hidden_sizes=[32, 32]",
    "algorithm.exploration_std=0.3",
    "env.backend=vmas",
    "env.name=give_way",  # two agents, velocities in [-0.5, 0.5]
    "env.max_steps=25",
    "logging.progress=false",
]
SIMULATED = [
    "coding.scheme=mds",
    "coding.learners=4",
    "coding.clock=simulated",
    "coding.stragglers.count=1",
    "coding.stragglers.delay_s=0.1",
]


@pytest.mark.parametrize("share_params", [False, True], ids=["own", "shared"])
def test_coded_continuous_maddpg_ends_bit_identical_to_centralized(
    tmp_path: Path, share_params: bool
) -> None:
    if "vmas" not in available_envs():
        pytest.skip("the vmas backend is not installed")

    def theta(name: str, *extra: str) -> torch.Tensor:
        sharing = f"algorithm.share_params={str(share_params).lower()}"
        config = load_config(data={}, overrides=[*MADDPG, sharing, *extra])
        return run(config, run_dir=tmp_path / name).theta

    centralized = theta("centralized", "train.updates=4")
    assert torch.equal(theta("coded", "train.updates=4", *SIMULATED), centralized)
    # Two updates happened (iterations 3 and 4): the rows moved from where they started.
    assert not torch.equal(theta("before", "train.updates=2"), centralized)
    # give_way's two agents are one group: shared, their rows stay one network.
    assert torch.equal(centralized[0], centralized[1]) == share_params
