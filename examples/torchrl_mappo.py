"""TorchRL's multi-agent PPO tutorial with marlplug's JointPPOLoss and the cross-agent redundancy penalty.

This is pytorch/rl tutorials/sphinx-tutorials/multiagent_ppo.py (VMAS navigation, MultiAgentMLP policy,
shared-parameter centralized critic, Collector, ReplayBuffer, GAE, one Adam) with the lines marked
``# marlplug`` changed; docs/how-to/torchrl.md shows the diff. Run it with the tutorial's sizes, or small:

    python examples/torchrl_mappo.py --small
    python examples/torchrl_mappo.py --env pettingzoo --iterations 3
"""

from __future__ import annotations

import argparse
import math

import torch
from tensordict.nn import TensorDictModule, TensorDictSequential
from tensordict.nn.distributions import NormalParamExtractor
from torchrl.collectors import Collector
from torchrl.data.replay_buffers import ReplayBuffer
from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement
from torchrl.data.replay_buffers.storages import LazyTensorStorage
from torchrl.envs import EnvBase, RewardSum, TransformedEnv
from torchrl.modules import MultiAgentMLP, ProbabilisticActor, TanhNormal
from torchrl.objectives import ValueEstimators

from marlplug.losses import JointPPOLoss, RedundancyLoss, sum_losses  # marlplug


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", choices=["vmas", "pettingzoo"], default="vmas")
    parser.add_argument("--iterations", type=int, default=10, help="collector batches")
    parser.add_argument("--frames-per-batch", type=int, default=6000)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--minibatch-size", type=int, default=400)
    parser.add_argument("--max-steps", type=int, default=100, help="episode length")
    parser.add_argument("--num-cells", type=int, default=256, help="hidden width")
    parser.add_argument("--redundancy-coef", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--small", action="store_true", help="seconds-long run: 2 iterations of 80 frames"
    )
    args = parser.parse_args(argv)
    if args.small:
        args.iterations, args.frames_per_batch, args.epochs = 2, 80, 2
        args.minibatch_size, args.max_steps, args.num_cells = 40, 20, 32
    return args


def make_env(args: argparse.Namespace) -> EnvBase:
    if args.env == "vmas":
        from torchrl.envs.libs.vmas import VmasEnv

        env: EnvBase = VmasEnv(
            scenario="navigation",
            num_envs=max(1, args.frames_per_batch // args.max_steps),
            continuous_actions=True,
            max_steps=args.max_steps,
            n_agents=3,
            seed=args.seed,
        )
    else:
        from mpe2 import simple_spread_v3
        from torchrl.envs.libs.pettingzoo import PettingZooWrapper

        env = PettingZooWrapper(
            simple_spread_v3.parallel_env(N=3, max_cycles=args.max_steps, continuous_actions=True),
            seed=args.seed,
        )
    group = env.reward_key[0]
    return TransformedEnv(
        env, RewardSum(in_keys=[env.reward_key], out_keys=[(group, "episode_reward")])
    )


def main(argv: list[str] | None = None) -> list[float]:
    """Train; returns the mean episode reward of every iteration."""
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    env = make_env(args)
    group = env.reward_key[0]  # "agents" on VMAS, "agent" on PettingZoo
    action_spec = env.full_action_spec_unbatched[env.action_key]
    n_agents = action_spec.shape[0]
    n_obs = env.observation_spec[group, "observation"].shape[-1]

    # marlplug: the policy's first layer writes the encoder features the redundancy penalty reads.
    encoder = TensorDictModule(
        MultiAgentMLP(
            n_agent_inputs=n_obs,
            n_agent_outputs=args.num_cells,
            n_agents=n_agents,
            centralized=False,
            share_params=True,
            depth=1,
            num_cells=args.num_cells,
            activation_class=torch.nn.Tanh,
        ),
        in_keys=[(group, "observation")],
        out_keys=[(group, "features")],
    )
    head = TensorDictModule(
        torch.nn.Sequential(
            torch.nn.Tanh(),
            torch.nn.Linear(args.num_cells, 2 * action_spec.shape[-1]),
            NormalParamExtractor(),
        ),
        in_keys=[(group, "features")],
        out_keys=[(group, "loc"), (group, "scale")],
    )
    policy = ProbabilisticActor(
        module=TensorDictSequential(encoder, head),
        spec=action_spec,
        in_keys=[(group, "loc"), (group, "scale")],
        out_keys=[env.action_key],
        distribution_class=TanhNormal,
        distribution_kwargs={"low": action_spec.space.low, "high": action_spec.space.high},
        return_log_prob=True,
    )
    critic = TensorDictModule(
        module=MultiAgentMLP(
            n_agent_inputs=n_obs,
            n_agent_outputs=1,
            n_agents=n_agents,
            centralized=True,  # MAPPO
            share_params=True,
            depth=2,
            num_cells=args.num_cells,
            activation_class=torch.nn.Tanh,
        ),
        in_keys=[(group, "observation")],
        out_keys=[(group, "state_value")],
    )

    collector = Collector(
        env,
        policy,
        frames_per_batch=args.frames_per_batch,
        total_frames=args.frames_per_batch * args.iterations,
    )
    replay_buffer = ReplayBuffer(
        storage=LazyTensorStorage(args.frames_per_batch),
        sampler=SamplerWithoutReplacement(),
        batch_size=args.minibatch_size,
    )

    loss_module = JointPPOLoss(  # marlplug
        actor_network=policy,
        critic_network=critic,
        clip_epsilon=0.2,
        entropy_coeff=1e-4,
        normalize_advantage=False,
        aux_losses={"redundancy": RedundancyLoss(coef=args.redundancy_coef)},  # marlplug
    )
    loss_module.set_keys(
        reward=env.reward_key,
        action=env.action_key,
        value=(group, "state_value"),
        done=(group, "done"),
        terminated=(group, "terminated"),
    )
    loss_module.make_value_estimator(ValueEstimators.GAE, gamma=0.99, lmbda=0.9)
    GAE = loss_module.value_estimator  # the tutorial's name
    optim = torch.optim.Adam(loss_module.parameters(), 3e-4)

    rewards: list[float] = []
    for iteration, tensordict_data in enumerate(collector):
        for flag in ("done", "terminated"):
            tensordict_data.set(
                ("next", group, flag),
                tensordict_data.get(("next", flag))
                .unsqueeze(-1)
                .expand(tensordict_data.get_item_shape(("next", env.reward_key))),
            )
        with torch.no_grad():
            GAE(
                tensordict_data,
                params=loss_module.critic_network_params,
                target_params=loss_module.target_critic_network_params,
            )
        replay_buffer.extend(tensordict_data.reshape(-1))
        for _ in range(args.epochs):
            for _ in range(args.frames_per_batch // args.minibatch_size):
                loss_vals = loss_module(replay_buffer.sample())
                loss_value = sum_losses(loss_vals)  # marlplug: every loss_* term, aux included
                loss_value.backward()
                torch.nn.utils.clip_grad_norm_(loss_module.parameters(), 1.0)
                optim.step()
                optim.zero_grad()
        collector.update_policy_weights_()

        done = tensordict_data.get(("next", group, "done"))
        episode_rewards = tensordict_data.get(("next", group, "episode_reward"))[done]
        reward = float(episode_rewards.mean()) if episode_rewards.numel() else math.nan
        rewards.append(reward)
        logged = loss_vals.detach()
        print(
            f"iteration {iteration}: episode reward {reward:.3f}, "
            f"objective {float(logged['loss_objective']):.4f}, "
            f"critic {float(logged['loss_critic']):.4f}, "
            f"redundancy {float(logged['loss_redundancy']):.4f}"
        )
    collector.shutdown()
    return rewards


if __name__ == "__main__":
    main()
