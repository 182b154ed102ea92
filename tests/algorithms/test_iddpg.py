"""IDDPG: MADDPG's local-critic option under its own name; it builds, meets the algorithm contract
and trains a step through the orchestrator."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import torch

from marlplug import load_config
from marlplug.algorithms.maddpg import MADDPG
from marlplug.algorithms.maddpg.iddpg import IDDPG, IddpgOptions
from marlplug.testing import AlgorithmContract
from marlplug.train.components import training_env
from marlplug.train.orchestrator import run

SMALL: dict[str, Any] = {
    "hidden_sizes": [16, 16],
    "minibatch_size": 16,
    "learning_starts": 32,
    "steps_per_iteration": 16,
}


class TestIDDPG(AlgorithmContract):
    algorithm_class = IDDPG
    options: ClassVar[dict[str, Any]] = SMALL
    registered_name = "iddpg"


def test_iddpg_is_maddpg_with_local_critics() -> None:
    assert IddpgOptions().critic == "local"
    assert IDDPG(critic="joint").options.critic == "joint"  # still MADDPG's option
    # Apart from the critic's default, the same hyperparameters as MADDPG's.
    assert IddpgOptions().model_dump() == {**MADDPG().options.model_dump(), "critic": "local"}


def test_iddpg_trains_a_step(tmp_path: Path) -> None:
    overrides = [
        "algorithm.name=iddpg",
        "algorithm.minibatch_size=16",
        "algorithm.learning_starts=25",
        "algorithm.steps_per_iteration=25",
        "algorithm.hidden_sizes=[16]",
        "env.agents=2",
        "train.updates=2",
        "train.eval_every=0",
        "logging.progress=false",
    ]
    config = load_config(data={}, overrides=overrides)
    program = IDDPG(**config.algorithm.options.model_dump()).bind(training_env(config))
    # Each agent's critic reads its own observation and action only.
    assert program.critic_sizes[0] == program.obs_dim + program.action_dim
    result = run(config, run_dir=tmp_path / "run")
    start, _ = program.init_state(config.seed)
    assert result.theta.shape == start.shape
    assert not torch.equal(result.theta, start)  # the update of the second iteration moved it
