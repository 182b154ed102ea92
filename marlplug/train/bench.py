"""``marlplug bench train``: ``marlplug train`` vs a plain TorchRL MAPPO pipeline, side by side.

The plain pipeline is written the way TorchRL's multi-agent PPO tutorial writes it (MultiAgentMLP
policy and centralized critic, ClipPPOLoss, GAE, Collector, ReplayBuffer, Adam), on the same env,
settings and frame budget.
"""

from __future__ import annotations

import json
import tempfile
import time

import click
import torch
from tensordict.nn import TensorDictModule
from torch.distributions import Categorical
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, ReplayBuffer
from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement
from torchrl.modules import MultiAgentMLP, ProbabilisticActor
from torchrl.objectives import ClipPPOLoss, ValueEstimators

from marlplug.config import load_config
from marlplug.envs import make_env
from marlplug.train.run import run_training
from marlplug.train.trainer import episode_returns


def plain_torchrl_mappo(
    *, agents: int, updates: int, frames_per_batch: int, minibatch: int, epochs: int, seed: int
) -> tuple[float, float | None]:
    """Train like TorchRL's MAPPO tutorial; returns (frames per second, final mean return)."""
    torch.manual_seed(seed)
    env = make_env("cooperative_navigation", agents=agents, seed=seed)
    group = "agent"
    observation_dim = env.observation_spec[group, "observation"].shape[-1]
    n_actions = env.full_action_spec[group, "action"].space.n
    policy_net = MultiAgentMLP(
        n_agent_inputs=observation_dim, n_agent_outputs=n_actions, n_agents=agents,
        centralized=False, share_params=False, depth=2, num_cells=64, activation_class=torch.nn.Tanh,
    )
    policy = ProbabilisticActor(
        TensorDictModule(policy_net, in_keys=[(group, "observation")], out_keys=[(group, "logits")]),
        in_keys={"logits": (group, "logits")}, out_keys=[(group, "action")],
        distribution_class=Categorical, return_log_prob=True, log_prob_key=(group, "action_log_prob"),
    )
    critic_net = MultiAgentMLP(
        n_agent_inputs=observation_dim, n_agent_outputs=1, n_agents=agents,
        centralized=True, share_params=False, depth=2, num_cells=64, activation_class=torch.nn.Tanh,
    )
    critic = TensorDictModule(critic_net, in_keys=[(group, "observation")], out_keys=[(group, "state_value")])
    collector = Collector(env, policy, frames_per_batch=frames_per_batch,
                          total_frames=frames_per_batch * updates, auto_register_policy_transforms=False)
    replay_buffer = ReplayBuffer(storage=LazyTensorStorage(frames_per_batch),
                                 sampler=SamplerWithoutReplacement(), batch_size=minibatch)
    loss_module = ClipPPOLoss(actor_network=policy, critic_network=critic, clip_epsilon=0.2,
                              entropy_coeff=0.01, normalize_advantage=False, loss_critic_type="l2")
    loss_module.set_keys(reward=(group, "reward"), action=(group, "action"),
                         sample_log_prob=(group, "action_log_prob"), value=(group, "state_value"),
                         done=(group, "done"), terminated=(group, "terminated"),
                         advantage=(group, "advantage"), value_target=(group, "value_target"))
    loss_module.make_value_estimator(ValueEstimators.GAE, gamma=0.99, lmbda=0.95)
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=1e-3)
    final_return = None
    start = time.perf_counter()
    for tensordict_data in collector:
        with torch.no_grad():
            loss_module.value_estimator(tensordict_data, params=loss_module.critic_network_params,
                                        target_params=loss_module.target_critic_network_params)
        replay_buffer.extend(tensordict_data.reshape(-1))
        for _ in range(epochs):
            for _ in range(frames_per_batch // minibatch):
                subdata = replay_buffer.sample()
                loss_vals = loss_module(subdata)
                loss_value = loss_vals["loss_objective"] + loss_vals["loss_critic"] + loss_vals["loss_entropy"]
                loss_value.backward()
                torch.nn.utils.clip_grad_norm_(loss_module.parameters(), 0.5)
                optimizer.step()
                optimizer.zero_grad()
        collector.update_policy_weights_()
        returns = episode_returns(tensordict_data, [group])
        final_return = float(returns.mean()) if returns.numel() else final_return
    seconds = time.perf_counter() - start
    collector.shutdown()
    return frames_per_batch * updates / seconds, final_return


@click.command()
@click.option("--agents", default=3, show_default=True)
@click.option("--updates", default=5, show_default=True)
@click.option("--frames-per-batch", default=1000, show_default=True)
@click.option("--minibatch", default=250, show_default=True)
@click.option("--epochs", default=4, show_default=True)
@click.option("--seed", default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print marlplug_fps, torchrl_fps, ratio, returns.")
def train(agents: int, updates: int, frames_per_batch: int, minibatch: int, epochs: int, seed: int,
          as_json: bool) -> None:
    """`marlplug train` vs a plain TorchRL MAPPO pipeline: frames/s and final mean return."""
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        config = load_config(
            data={"seed": seed, "env": {"name": "cooperative_navigation", "agents": agents}},
            overrides=[
                f"train.updates={updates}", f"train.rollout_steps={frames_per_batch}",
                f"train.minibatch_size={minibatch}", f"train.n_epochs={epochs}",
                "train.iterate_all_minibatches=true", "train.lr=0.001", f"logging.dir={folder}",
                "logging.progress=false", "algorithm.hidden_size=64", "algorithm.feature_dim=64",
            ],
        )
        result = run_training(config)
    torchrl_fps, torchrl_return = plain_torchrl_mappo(
        agents=agents, updates=updates, frames_per_batch=frames_per_batch, minibatch=minibatch,
        epochs=epochs, seed=seed,
    )
    out = {
        "marlplug_fps": round(result.fps, 1),
        "torchrl_fps": round(torchrl_fps, 1),
        "ratio": round(result.fps / torchrl_fps, 3),
        "marlplug_final_return": result.final_return,
        "torchrl_final_return": torchrl_return,
        "frames": frames_per_batch * updates,
    }
    if as_json:
        click.echo(json.dumps(out, indent=2))
    else:
        for key, value in out.items():
            click.echo(f"{key:>22}: {value}")
