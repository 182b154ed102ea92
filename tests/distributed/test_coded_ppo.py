"""Coded joint PPO: every minibatch step is one coded round of the same PPO program, and training
matches the centralized run (parameters, Adam state, gradient norms, frozen agents)."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from marlplug import load_config
from marlplug.configs import default_config_path
from marlplug.envs import make_env
from marlplug.runs.checkpoint import load_checkpoint
from marlplug.train.components import learner_algorithm
from marlplug.train.executors import make_executor
from marlplug.train.loop import Training
from marlplug.train.run import run_training
from marlplug.train.run_state import ROUND_LOGS_KEY

# 3 agents, 2 updates of 20 frames in minibatches of 10: 2 coded rounds per update.
SMALL = [
    "env.agents=3",
    "algorithm.hidden_size=16",
    "algorithm.feature_dim=16",
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


def _relative(actual: torch.Tensor, expected: torch.Tensor) -> float:
    return float((actual - expected).norm() / expected.norm())


# PPO's options that change what every round computes: the learners must get them too.
PPO_OPTIONS = [
    "train.lr_schedule=linear",
    "algorithm.ent_coef_final=0.0",
    "algorithm.obs_norm=true",
]


@pytest.mark.parametrize(
    "options",
    [
        [],
        PPO_OPTIONS,
        ["algorithm.critic=state"],
        ["algorithm.share_params=true", "algorithm.value_norm=false"],
    ],
    ids=["defaults", "schedules-obs-norm", "state-critic", "shared-params"],
)
def test_coded_ppo_matches_centralized_ppo_after_two_updates(
    tmp_path: Path, options: list[str]
) -> None:
    centralized = run_training(
        load_config(default_config_path(), [*SMALL, *options, f"logging.dir={tmp_path}"])
    )
    coded = run_training(
        load_config(default_config_path(), [*SMALL, *options, *CODED, f"logging.dir={tmp_path}"])
    )
    assert sum(log.rounds for log in coded.iterations) == 4
    assert _relative(coded.theta, centralized.theta) <= 1e-6
    assert _relative(coded.opt_state, centralized.opt_state) <= 1e-6
    if "algorithm.share_params=true" in options:  # one policy: every agent's rows equal
        assert all(torch.equal(row, centralized.theta[0]) for row in centralized.theta)
        # Decoding adds its round-off, agent by agent.
        assert all(_relative(row, coded.theta[0]) <= 1e-6 for row in coded.theta)
    for ours, theirs in zip(coded.iterations, centralized.iterations, strict=True):
        for name in ("agent_0/grad_norm", "loss_objective"):
            assert abs(ours.stats[name] - theirs.stats[name]) <= 1e-4 * (
                1 + abs(theirs.stats[name])
            )


def test_coded_ppo_through_the_cli(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    args = [f"--set={item}" for item in [*SMALL, *CODED, f"logging.dir={tmp_path}"]]
    result = run_cli("train", *args, "--set", "logging.run_name=coded", "--no-progress")
    assert result.exit_code == 0, result.err
    run_dir = tmp_path / "coded"
    for name in ("checkpoint.pt", "learning_curve.png", "rounds.csv", "config.yaml"):
        assert (run_dir / name).is_file()
    assert any(line.startswith("rounds log:") for line in result.out.splitlines())
    with (run_dir / "rounds.csv").open(newline="") as handle:
        rounds = list(csv.DictReader(handle))
    # One row per coded round (2 minibatch steps per update), each with the update it belongs to.
    assert [row["iteration"] for row in rounds] == ["0", "0", "1", "1"]
    assert [row["round"] for row in rounds] == ["0", "1", "2", "3"]
    assert all(len(row["round_learners_used"].split()) >= 3 for row in rounds)
    assert rounds[0]["env_steps"] == rounds[1]["env_steps"] != rounds[2]["env_steps"]
    assert rounds[2]["update_s"] == rounds[3]["update_s"]
    # The timeline is drawn from the rounds the checkpoint keeps: every one of them, in order.
    kept = load_checkpoint(run_dir / "checkpoint.pt")[ROUND_LOGS_KEY]
    assert [entry["round_index"] for entry in kept] == [0, 1, 2, 3]


def test_a_frozen_agent_keeps_its_weights_and_adam_state_exactly() -> None:
    config = load_config(default_config_path(), SMALL + CODED)
    algorithm = learner_algorithm(config)
    env = make_env("cooperative_navigation", agents=3, seed=config.seed)
    program = algorithm.bind(env, config)
    source = algorithm.rollouts(env, program, config)
    executor = make_executor(config, program)
    try:
        training = Training(program, source, executor, agent_names=["a", "b", "c"], seed=0)
        training.step()  # every agent has Adam state before agent 1 is frozen
        training.freeze({1})
        theta, opt_state = training.theta.clone(), training.opt_state.clone()
        training.step()
        assert torch.equal(training.theta[1], theta[1])
        assert torch.equal(training.opt_state[1], opt_state[1])
        for agent in (0, 2):
            assert not torch.equal(training.theta[agent], theta[agent])
    finally:
        executor.close()
        source.close()
