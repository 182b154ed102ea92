"""PPO on an env with action masks (LBF, issue 45): the collector, the loss, an update and greedy
evaluation all respect the group's ``action_mask``."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from marlplug.algorithms.acting import acting_policy
from marlplug.algorithms.ppo import PPO
from marlplug.config import load_config
from marlplug.envs import make_env
from marlplug.envs.evaluate import evaluate
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)

LBF = "Foraging-8x8-2p-2f-coop-v3"


def _valid(td: TensorDictBase) -> torch.Tensor:
    action = td.get(("agent", "action")).unsqueeze(-1)
    return td.get(("agent", "action_mask")).gather(-1, action).squeeze(-1)


def test_ppo_on_lbf_collects_learns_and_evaluates_among_valid_actions() -> None:
    config = load_config(
        data={
            "env": {"backend": "gymnasium", "name": LBF},
            "algorithm": {"name": "ppo", "hidden_size": 16, "feature_dim": 8},
            "train": {"rollout_steps": 200, "minibatch_size": 100, "n_epochs": 1},
        }
    )
    env = make_env(LBF, backend="gymnasium", seed=0)
    algorithm = PPO(hidden_size=16, feature_dim=8)
    program = algorithm.bind(env, config)
    source = algorithm.rollouts(env, program, config)
    theta, opt_state = program.init_state(config.seed)
    minibatches = list(source.batches(theta, 0))
    rollout = source.last_rollout
    assert rollout is not None
    source.close(close_env=False)
    assert bool(_valid(rollout).all())
    # LBF forbids moves into walls and food often enough that an unmasked policy would take some.
    assert not bool(rollout.get(("agent", "action_mask")).all())

    batch = minibatches[0]
    with torch.no_grad():
        out = program.loss(batch)
    # The loss's masked log-probabilities are the collector's: no ratio moves before a step.
    torch.testing.assert_close(out["max_ratio"], torch.tensor(1.0))
    torch.testing.assert_close(out["mean_ratio"], torch.tensor(1.0))
    update = program.update(theta, opt_state, batch, [0, 1], seed=1)
    assert bool(update.stats["stepped"].all())
    assert bool(torch.isfinite(update.theta).all())
    assert not torch.equal(update.theta, theta)

    policy = acting_policy(program, env, update.theta)
    acted: list[torch.Tensor] = []

    def recording(td: TensorDictBase) -> TensorDictBase:
        td = policy(td)
        acted.append(_valid(td))
        return td

    result = evaluate(env, recording, episodes=2, seed=0, deterministic=True)
    assert result.episodes == 2
    assert bool(torch.cat(acted).all())
