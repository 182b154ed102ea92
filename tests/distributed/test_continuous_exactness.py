"""Coded joint PPO with continuous actions (a TanhNormal policy, its entropy a sampled estimate)
ends bit for bit where the centralized run ends: every round's forward draws its samples from the
round's seed, and the learners' rows decode exactly (:mod:`marlplug.coding.exact`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from marlplug import load_config
from marlplug.envs import available_envs
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
