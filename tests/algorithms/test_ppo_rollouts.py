"""PPO rollouts on the fast path: batched episode returns and lean minibatches."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tensordict import TensorDict

from marlplug import load_config
from marlplug.algorithms.ppo import PPO
from marlplug.algorithms.ppo.rollouts import episode_returns
from marlplug.envs import make_env


def _loop_returns(rewards: torch.Tensor, done: torch.Tensor) -> list[float]:
    """The obvious reference: walk every env copy and every step."""
    out: list[float] = []
    for env_rewards, env_done in zip(rewards, done, strict=True):
        total = 0.0
        for reward, ended in zip(env_rewards.tolist(), env_done.tolist(), strict=True):
            total += reward
            if ended:
                out.append(total)
                total = 0.0
    return out


@settings(max_examples=60, deadline=None)
@given(
    envs=st.integers(1, 5),
    steps=st.integers(1, 9),
    agents=st.sampled_from([1, 2, 4]),
    seed=st.integers(0, 2**16),
)
def test_episode_returns_match_a_per_env_loop(
    envs: int, steps: int, agents: int, seed: int
) -> None:
    generator = torch.Generator().manual_seed(seed)
    # Small integers over 1, 2 or 4 agents: every mean and partial sum is exact in float32, so the
    # reference may add in any order.
    reward = torch.randint(-4, 5, (envs, steps, agents, 1), generator=generator).float()
    done = torch.rand(envs, steps, 1, generator=generator) < 0.3
    rollout = TensorDict(
        {("next", "agent", "reward"): reward, ("next", "done"): done}, batch_size=[envs, steps]
    )
    expected = _loop_returns(reward.mean(dim=(-2, -1)), done.squeeze(-1))
    assert episode_returns(rollout, ["agent"]).tolist() == expected


def test_episode_returns_average_over_every_group_s_agents() -> None:
    rollout = TensorDict(
        {
            ("next", "agent", "reward"): torch.ones(2, 4, 2, 1),
            ("next", "adversary", "reward"): torch.full((2, 4, 1, 1), 4.0),
            ("next", "done"): torch.tensor([[0, 1, 0, 1], [0, 0, 0, 0]]).bool().unsqueeze(-1),
        },
        batch_size=[2, 4],
    )
    # mean over the 3 agents: (1 + 1 + 4) / 3 = 2 per step; two 2-step episodes in env 0.
    assert episode_returns(rollout, ["agent", "adversary"]).tolist() == [4.0, 4.0]
    none_done = rollout.clone()
    none_done.set(("next", "done"), torch.zeros(2, 4, 1, dtype=torch.bool))
    assert episode_returns(none_done, ["agent"]).shape == (0,)


def test_minibatches_carry_what_the_loss_reads_and_not_the_next_step() -> None:
    config = load_config(
        data={
            "env": {"name": "cooperative_navigation", "agents": 2, "backend": "vmas"},
            "algorithm": {"name": "ppo", "hidden_size": 8, "feature_dim": 4},
            "train": {"rollout_steps": 5, "num_envs": 4, "minibatch_size": 8, "n_epochs": 1},
        }
    )
    env = make_env("cooperative_navigation", agents=2, seed=0, backend="vmas", num_envs=4)
    algorithm = PPO(hidden_size=8, feature_dim=4)
    program = algorithm.bind(env, config)
    source = algorithm.rollouts(env, program, config)
    theta, _ = program.init_state(config.seed)
    try:
        batch = next(iter(source.batches(theta, 0)))
        rollout = source.last_rollout
        assert rollout is not None
    finally:
        source.close()
    keys = set(batch.keys(include_nested=True, leaves_only=True))
    assert not any(isinstance(key, tuple) and key[0] in ("next", "collector") for key in keys)
    for name in ("observation", "action", "action_log_prob", "advantage", "value_target"):
        assert ("agent", name) in keys, name
    # Rows are gathered, not recomputed: every minibatch row is one of the rollout's rows.
    flat = rollout.reshape(-1)
    observations = flat.get(("agent", "observation")).flatten(1)
    for row in batch.get(("agent", "observation")).flatten(1):
        assert (observations == row).all(dim=1).any()
