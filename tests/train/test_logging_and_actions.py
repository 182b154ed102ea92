"""TensorBoard metrics, continuous-action training, and the policy a checkpoint's rows act with."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from marlplug.algorithms.ppo import PPO
from marlplug.config import load_config
from marlplug.envs import make_env
from marlplug.errors import UserError
from marlplug.runs.checkpoint import load_checkpoint, load_policy
from marlplug.train.run import run_training
from tests.train.helpers import SMALL_RUN


def test_tensorboard_backend_writes_scalar_events(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    config = load_config(
        overrides=[
            *SMALL_RUN,
            f"logging.dir={tmp_path}",
            "logging.run_name=tb",
            "logging.backend=tensorboard",
            "train.updates=2",
        ]
    )
    result = run_training(config)
    event_files = list((tmp_path / "tb").rglob("events.out.tfevents.*"))
    assert event_files, list((tmp_path / "tb").rglob("*"))
    events = EventAccumulator(str(event_files[0].parent))
    events.Reload()
    tags = events.Tags()["scalars"]
    assert {"return_per_agent", "return_team", "total_loss"} <= set(tags)
    returns = events.Scalars("return_per_agent")
    assert [event.step for event in returns] == [1, 2]
    assert returns[-1].value == pytest.approx(result.history[-1].per_agent)


def test_continuous_actions_train(tmp_path: Path) -> None:
    config = load_config(
        overrides=[
            *SMALL_RUN,
            f"logging.dir={tmp_path}",
            "logging.run_name=cont",
            "env.continuous_actions=true",
            "train.updates=2",
        ]
    )
    result = run_training(config)
    assert result.nonfinite is None  # no agent step met a non-finite value
    stats = result.iterations[-1].stats
    assert stats and all(math.isfinite(value) for value in stats.values()), stats
    theta = load_checkpoint(result.checkpoint)["training"]["theta"]
    env = make_env("cooperative_navigation", agents=2, seed=0, continuous_actions=True)
    policy = load_policy(result.checkpoint, env, config)
    # The policy acts with the trained rows: a program bound afresh holds the initial weights
    # until the checkpoint's rows are loaded into it.
    program = PPO(**config.algorithm.options.model_dump()).bind(env, config)
    initial = [p.detach().clone() for p in program.policy.parameters()]
    program.load(theta)
    trained = list(policy.parameters())
    assert all(torch.equal(a, b) for a, b in zip(trained, program.policy.parameters(), strict=True))
    # The weights moved away from their initialization.
    assert any(not torch.equal(a, b) for a, b in zip(trained, initial, strict=True))
    actions = policy(env.reset())
    assert all(
        bool(torch.isfinite(actions.get((group, "action"))).all()) for group in env.group_map
    )


def test_load_policy_rejects_a_mismatched_env(tmp_path: Path) -> None:
    config = load_config(
        overrides=[*SMALL_RUN, f"logging.dir={tmp_path}", "logging.run_name=m", "train.updates=1"]
    )
    result = run_training(config)
    with pytest.raises(UserError, match="do not fit"):
        load_policy(result.checkpoint, make_env("cooperative_navigation", agents=3, seed=0), config)
    (tmp_path / "junk.pt").write_text("not a checkpoint")
    with pytest.raises(UserError, match="--checkpoint"):
        load_policy(
            tmp_path / "junk.pt", make_env("cooperative_navigation", agents=2, seed=0), config
        )
