"""JointPPOLoss dropped into an unmodified TorchRL training loop (Collector + GAE + ReplayBuffer + Adam)."""

from __future__ import annotations

import torch
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, ReplayBuffer
from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement
from torchrl.objectives import ValueEstimators

from marlplug.losses import JointPPOLoss, RedundancyLoss
from marlplug.nn import JointActorCritic
from tests.losses.matching_env import MatchingEnv


def test_an_unmodified_torchrl_loop_learns_a_small_task() -> None:
    torch.manual_seed(0)
    env = MatchingEnv(n_agents=2, n_targets=3)
    env.set_seed(0)
    model = JointActorCritic.from_env(env, hidden_size=32, feature_dim=16)
    loss_module = JointPPOLoss(
        actor_network=model.actors,
        critic_network=model.critics,
        aux_losses={"redundancy": RedundancyLoss(coef=0.01)},
        entropy_coeff=0.01,
    )
    loss_module.make_value_estimator(ValueEstimators.GAE, gamma=0.9, lmbda=0.9)
    frames_per_batch = 256
    collector = Collector(
        env, model.policy, frames_per_batch=frames_per_batch, total_frames=frames_per_batch * 12
    )
    replay_buffer = ReplayBuffer(
        storage=LazyTensorStorage(frames_per_batch),
        sampler=SamplerWithoutReplacement(),
        batch_size=64,
    )
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=3e-3)

    mean_rewards = []
    for tensordict_data in collector:
        mean_rewards.append(float(tensordict_data["next", "agent", "reward"].mean()))
        with torch.no_grad():
            loss_module.value_estimator(tensordict_data)
        replay_buffer.extend(tensordict_data.reshape(-1))
        for _ in range(4):
            for _ in range(frames_per_batch // 64):
                subdata = replay_buffer.sample()
                loss_vals = loss_module(subdata)
                loss_value = sum(
                    value for key, value in loss_vals.items() if key.startswith("loss_")
                )
                loss_value.backward()
                torch.nn.utils.clip_grad_norm_(loss_module.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
        collector.update_policy_weights_()
    collector.shutdown()
    # Chance level is 1/3; a learning policy ends well above it.
    assert mean_rewards[0] < 0.5
    assert sum(mean_rewards[-2:]) / 2 > 0.8, mean_rewards
