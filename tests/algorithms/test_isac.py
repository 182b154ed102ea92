"""ISAC: independent SAC over per-agent rows; it meets the algorithm contract (continuous actions
with and without shared parameters, discrete actions), learns or fixes its temperature and trains a
step through the orchestrator."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import torch

from marlplug import load_config
from marlplug.algorithms.sac.discrete import DiscreteSacProgram
from marlplug.algorithms.sac.isac import ISAC
from marlplug.envs import make_env
from marlplug.testing import AlgorithmContract
from marlplug.testing.algorithms import build_algorithm, rollout_case
from marlplug.train.components import training_env
from marlplug.train.orchestrator import run

SMALL: dict[str, Any] = {
    "hidden_sizes": [16, 16],
    "minibatch_size": 16,
    "learning_starts": 32,
    "steps_per_iteration": 16,
}
CONTINUOUS: dict[str, Any] = {"agents": 3, "continuous_actions": True}


class TestISAC(AlgorithmContract):
    algorithm_class = ISAC
    options: ClassVar[dict[str, Any]] = SMALL
    env_options: ClassVar[dict[str, Any]] = CONTINUOUS
    registered_name = "isac"


class TestISACSharedParams(AlgorithmContract):
    algorithm_class = ISAC
    options: ClassVar[dict[str, Any]] = {**SMALL, "share_params": True}
    env_options: ClassVar[dict[str, Any]] = CONTINUOUS


def _update(options: dict[str, Any]) -> tuple[Any, Any, Any]:
    case = rollout_case(build_algorithm(ISAC, {**SMALL, **options}), env_options=CONTINUOUS)
    program = case.program
    agents = list(range(program.num_agents))
    result = program.update(case.theta_all, case.opt_state, case.batch, agents, 0)
    return program, case, result


def _log_alpha(program: Any, theta: torch.Tensor) -> torch.Tensor:
    return program.theta_codec.unflatten(theta)["log_alpha"]


def test_learned_temperature_moves_and_fixed_one_stays() -> None:
    program, case, result = _update({})
    assert torch.equal(_log_alpha(program, case.theta_all), torch.zeros(3, 1))  # alpha_init 1
    assert not torch.equal(_log_alpha(program, result.theta), _log_alpha(program, case.theta_all))
    assert result.stats["alpha"].tolist() == [1.0, 1.0, 1.0]
    program, case, result = _update({"alpha": 0.2})
    fixed = _log_alpha(program, result.theta)
    assert torch.equal(fixed, torch.full((3, 1), torch.tensor(0.2).log().item()))
    assert not torch.equal(result.theta, case.theta_all)  # the networks still learn


def test_shared_params_keep_a_group_identical() -> None:
    _, case, result = _update({"share_params": True})
    assert torch.equal(case.theta_all[0], case.theta_all[2])  # one group: agent 0's networks
    assert torch.equal(result.theta[0], result.theta[2])
    assert torch.equal(result.opt_state[0], result.opt_state[1])
    _, unshared, _ = _update({})
    assert not torch.equal(unshared.theta_all[0], unshared.theta_all[2])


def test_actions_in_bounds_and_mode_without_exploration() -> None:
    program, case, _ = _update({})
    obs = case.batch["obs"]
    generator = torch.Generator().manual_seed(0)
    sampled = program.act(case.theta_all, obs, generator=generator)
    mode = program.act(case.theta_all, obs, explore=False)
    assert sampled.abs().max() <= 1 and not torch.equal(sampled, mode)
    scaled = program.env_scale(sampled)  # mpe2's continuous actions lie in [0, 1]
    assert scaled.min() >= 0 and scaled.max() <= 1


class TestISACDiscrete(AlgorithmContract):
    algorithm_class = ISAC
    options: ClassVar[dict[str, Any]] = SMALL  # cooperative navigation's five discrete moves


def test_discrete_actions_get_a_categorical_policy() -> None:
    env = make_env("cooperative_navigation", agents=2, seed=0)
    program = ISAC(**SMALL).bind(env)
    assert isinstance(program, DiscreteSacProgram)
    assert program.critic_sizes[-1] == program.action_dim  # a Q-value per action
    case = rollout_case(build_algorithm(ISAC, {**SMALL, "alpha": 0.1}))
    result = case.program.update(case.theta_all, case.opt_state, case.batch, [0, 1, 2], 0)
    # The expectation over the actions: the entropy is exact and at most log(5).
    assert bool((result.stats["entropy"] <= math.log(5) + 1e-6).all())
    assert torch.equal(result.stats["alpha"], torch.full((3,), 0.1).log().exp())


def test_isac_trains_a_step(tmp_path: Path) -> None:
    overrides = [
        "algorithm.name=isac",
        "algorithm.minibatch_size=16",
        "algorithm.learning_starts=25",
        "algorithm.steps_per_iteration=25",
        "algorithm.hidden_sizes=[16]",
        "env.agents=2",
        "env.continuous_actions=true",
        "train.updates=2",
        "train.eval_every=0",
        "logging.progress=false",
    ]
    config = load_config(data={}, overrides=overrides)
    program = ISAC(**config.algorithm.options.model_dump()).bind(training_env(config))
    result = run(config, run_dir=tmp_path / "run")
    start, _ = program.init_state(config.seed)
    assert result.theta.shape == start.shape
    assert not torch.equal(result.theta, start)  # the update of the second iteration moved it
