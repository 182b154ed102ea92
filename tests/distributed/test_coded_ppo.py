"""Coded joint PPO: every minibatch step is one coded round, and training matches the joint run
(parameters, Adam state, reported gradient norms, frozen agents)."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict

from marlplug import load_config
from marlplug.cli.train import default_config_path
from marlplug.train.run import attach_coded_steps, build_trainer

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


def _flat_parameters(trainer: Any) -> torch.Tensor:
    return torch.cat([param.detach().reshape(-1) for param in trainer.loss.parameters()])


def test_coded_ppo_matches_joint_ppo_after_two_updates() -> None:
    joint = build_trainer(load_config(default_config_path(), SMALL))
    coded_config = load_config(default_config_path(), SMALL + CODED)
    coded = build_trainer(coded_config.model_copy(update={"coding": None}))
    controller, step = attach_coded_steps(coded_config, coded)
    try:
        start = _flat_parameters(coded)
        assert torch.equal(start, _flat_parameters(joint))
        for _ in range(2):
            joint_stats = joint.train_update()
            coded_stats = coded.train_update()
            assert coded_stats.minibatch_steps == joint_stats.minibatch_steps == 2
            assert abs(coded_stats.total_loss - joint_stats.total_loss) <= 1e-4 * (
                1.0 + abs(joint_stats.total_loss)
            )
            # The norms before clipping, as the joint step reports them (not NaN).
            joint_norms = torch.tensor(joint_stats.per_agent["grad_norm"])
            coded_norms = torch.tensor(coded_stats.per_agent["grad_norm"])
            assert bool((joint_norms > 0).all())
            assert torch.allclose(coded_norms, joint_norms, rtol=1e-4, atol=0.0)
        assert step.rounds == 4
        expected, actual = _flat_parameters(joint), _flat_parameters(coded)
        assert not torch.equal(expected, start)
        assert (actual - expected).norm() / expected.norm() <= 1e-5
        for param in joint.loss.parameters():
            joint_state = joint.optimizer.state[param]
            coded_state = coded.optimizer.state[
                dict(coded.loss.named_parameters())[_name(joint, param)]
            ]
            assert torch.equal(joint_state["step"], coded_state["step"])
    finally:
        controller.close()
        joint.close()
        coded.close()


def _name(trainer: Any, param: torch.nn.Parameter) -> str:
    return next(name for name, p in trainer.loss.named_parameters() if p is param)


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
    assert [(row["update"], row["round"]) for row in rounds] == [
        ("1", "0"),
        ("1", "1"),
        ("2", "2"),
        ("2", "3"),
    ]
    assert all(len(row["learners_used"].split()) >= 3 for row in rounds)


def _agent_state(trainer: Any, agent: int) -> TensorDict:
    program = trainer.algorithm.program(trainer.loss, lr=1.0, max_grad_norm=1.0)
    theta, opt_state = program.rows(trainer.optimizer)
    return TensorDict(params=theta[agent], adam=opt_state[agent], step=opt_state[agent, -1])


def test_a_frozen_agent_keeps_its_weights_and_adam_state_exactly() -> None:
    joint = build_trainer(load_config(default_config_path(), SMALL))
    coded_config = load_config(default_config_path(), SMALL + CODED)
    coded = build_trainer(coded_config.model_copy(update={"coding": None}))
    controller, _ = attach_coded_steps(coded_config, coded)
    try:
        for trainer in (joint, coded):
            trainer.train_update()  # every agent has Adam state before agent 1 is frozen
            trainer.freeze({1})
        before = [_agent_state(coded, agent) for agent in range(3)]
        joint.train_update()
        coded.train_update()
        after = [_agent_state(coded, agent) for agent in range(3)]
        assert (after[1] == before[1]).all()
        for agent in (0, 2):
            assert not (after[agent]["params"] == before[agent]["params"]).all()
            assert int(after[agent]["step"]) == int(before[agent]["step"]) + 2
        expected, actual = _flat_parameters(joint), _flat_parameters(coded)
        assert (actual - expected).norm() / expected.norm() <= 1e-5
    finally:
        controller.close()
        joint.close()
        coded.close()
