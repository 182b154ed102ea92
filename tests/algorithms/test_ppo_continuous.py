"""PPO with VMAS's native continuous actions: a TanhNormal inside the action spec's bounds, trained
end to end on ``vmas/balance``."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from marlplug import load_config
from marlplug.envs import make_env, read_layout
from marlplug.nn.actor_critic import JointActorCritic
from marlplug.runs.checkpoint import load_policy
from marlplug.train.run import run_training

pytest.importorskip("marlplug_vmas")


def test_actions_and_log_probs_stay_inside_the_native_bounds() -> None:
    # give_way's agents take velocities in [-0.5, 0.5]; balance's forces in [-1, 1].
    env = make_env("give_way", backend="vmas", num_envs=8, seed=0, max_steps=20)
    (layout,) = read_layout(env).groups
    assert layout.continuous and layout.action_low == (-0.5, -0.5)
    torch.manual_seed(0)
    model = JointActorCritic.from_env(env, hidden_size=16, feature_dim=16)
    with torch.no_grad():
        rollout = env.rollout(20, policy=model.policy, break_when_any_done=False)
    actions = rollout["agents", "action"]
    assert actions.shape == (8, 20, 2, 2)
    assert bool((actions.abs() <= 0.5).all()) and bool((actions.abs() > 0.25).any())
    assert bool(torch.isfinite(rollout["agents", "action_log_prob"]).all())


def test_ppo_trains_on_vmas_balance(tmp_path: Path) -> None:
    config = load_config(
        data={
            "env": {"backend": "vmas", "name": "balance", "agents": 2, "max_steps": 10},
            "algorithm": {"hidden_size": 16, "feature_dim": 16, "ent_coef": 0.01},
            "train": {
                "updates": 2,
                "num_envs": 4,
                "rollout_steps": 10,
                "minibatch_size": 20,
                "n_epochs": 2,
            },
            "logging": {"dir": str(tmp_path), "run_name": "balance", "progress": False},
        }
    )
    result = run_training(config)
    assert result.nonfinite is None
    stats = result.iterations[-1].stats
    assert all(math.isfinite(value) for value in stats.values()), stats
    # TanhNormal has no closed-form entropy: the loss reports a sampled estimate per agent.
    assert {"agent_0/entropy", "agent_1/entropy"} <= set(stats)
    env = make_env("balance", backend="vmas", num_envs=4, seed=1, agents=2)
    actions = load_policy(result.checkpoint, env, config)(env.reset())["agents", "action"]
    assert actions.shape == (4, 2, 2) and bool((actions.abs() <= 1).all())
