"""Coded SAC training (ISAC and MASAC) ends bit for bit where the centralized run ends: every agent's
reparameterized samples come from ``(round seed, agent)`` alone, its losses are reduced per agent, so
each learner's replica of an agent's update is the centralized one and the rows decode exactly."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from marlplug import load_config
from marlplug.envs import available_envs
from marlplug.train.orchestrator import run

# 25-step iterations, updates from the third on (learning_starts 50).
SAC = [
    "algorithm.minibatch_size=32",
    "algorithm.learning_starts=50",
    "algorithm.steps_per_iteration=25",
    "algorithm.episode_length=25",
    "algorithm.hidden_sizes=[32, 32]",
    "env.backend=vmas",
    "env.name=give_way",  # two agents, velocities in [-0.5, 0.5]
    "env.max_steps=25",
    "logging.progress=false",
]
# Discrete SAC on mpe's cooperative navigation: expectations over the actions, nothing sampled.
DISCRETE = [
    "env.backend=mpe",
    "env.name=cooperative_navigation",
    "env.agents=3",
    "env.continuous_actions=false",
]
SIMULATED = [
    "coding.scheme=mds",
    "coding.learners=4",
    "coding.clock=simulated",
    "coding.stragglers.count=1",
    "coding.stragglers.delay_s=0.1",
]


@pytest.mark.parametrize(
    ("algorithm", "env"),
    [("isac", []), ("masac", []), ("isac", DISCRETE), ("masac", DISCRETE)],
    ids=["isac", "masac", "isac-discrete", "masac-discrete"],
)
def test_coded_sac_ends_bit_identical_to_centralized(
    tmp_path: Path, algorithm: str, env: list[str]
) -> None:
    if "vmas" not in available_envs() and not env:
        pytest.skip("the vmas backend is not installed")

    def state(name: str, *extra: str) -> tuple[torch.Tensor, torch.Tensor]:
        overrides = [*SAC, f"algorithm.name={algorithm}", *env, *extra]
        config = load_config(data={}, overrides=overrides)
        result = run(config, run_dir=tmp_path / name)
        return result.theta, result.opt_state

    centralized = state("centralized", "train.updates=4")
    coded = state("coded", "train.updates=4", *SIMULATED)
    assert torch.equal(coded[0], centralized[0])
    assert torch.equal(coded[1], centralized[1])
    # Two updates happened (iterations 3 and 4): the rows moved from where they started.
    assert not torch.equal(state("before", "train.updates=2")[0], centralized[0])
