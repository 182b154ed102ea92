"""A plain TorchRL MAPPO pipeline, the yardstick of the benchmarks: TorchRL's multi-agent PPO tutorial
on marlplug's cooperative navigation (mpe2 ``simple_spread``), with the tutorial's settings or tuned ones.

Written from ``tutorials/sphinx-tutorials/multiagent_ppo.py`` (pytorch/rl): a ``MultiAgentMLP``
policy (decentralized) and critic (centralized: MAPPO), ``ClipPPOLoss`` with GAE, a ``Collector``, a
``ReplayBuffer`` sampled without replacement, Adam and global-norm clipping. Two changes for the env:
mpe2's actions are discrete, so the policy is a ``Categorical`` over logits instead of a
``TanhNormal``; and mpe2 already gives each agent ``done``/``terminated`` keys, so the tutorial's
expansion of the root ``done`` is not needed. Nothing of marlplug's trainer is used.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule
from torch.distributions import Categorical
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, ReplayBuffer
from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement
from torchrl.envs import EnvBase
from torchrl.modules import MultiAgentMLP, ProbabilisticActor
from torchrl.objectives import ClipPPOLoss, ValueEstimators

from marlplug.envs import make_env

GROUP = "agent"


@dataclass(frozen=True)
class MappoSettings:
    """Every setting of the pipeline; the defaults are the tutorial's as TorchRL ships them.

    ``frames`` are joint env steps (one step of every agent in one env copy), as TorchRL's collector
    counts them and as marlplug's trainer does.
    """

    frames_per_batch: int = 6_000
    """Frames collected per training iteration."""
    num_envs: int = 1
    """Env copies (a ``SerialEnv`` when more than one; the tutorial's VMAS envs are batched)."""
    epochs: int = 30
    """Passes over each batch."""
    minibatch_size: int = 400
    lr: float = 3e-4
    max_grad_norm: float = 1.0
    clip_epsilon: float = 0.2
    clip_value: float | None = None
    """Value clipping (``None``: off, as in the tutorial)."""
    critic_coeff: float | None = None
    """Weight of the value loss (``None``: TorchRL's default)."""
    loss_critic_type: str = "smooth_l1"
    """Distance of the value loss (TorchRL's default, which the tutorial keeps)."""
    entropy_coeff: float = 1e-4
    gamma: float = 0.99
    lmbda: float = 0.9
    normalize_advantage: bool = False
    """The tutorial leaves it off (normalizing across the agent dimension); on, it normalizes per agent."""
    hidden: int = 256
    depth: int = 2
    share_params: bool = True
    """One network for all agents (policy and critic), as the tutorial does."""
    agents: int = 3


#: TorchRL's multi-agent PPO tutorial as shipped (its env swapped for one mpe copy).
TUTORIAL = MappoSettings()
#: The tuned variant of issue 14: 4 epochs, lr 1e-3, gamma .95, lambda .95, entropy .01, 2000
#: frames per batch from 4 serial envs; everything else as the tutorial.
TUNED = replace(
    TUTORIAL,
    frames_per_batch=2_000,
    num_envs=4,
    epochs=4,
    lr=1e-3,
    gamma=0.95,
    lmbda=0.95,
    entropy_coeff=0.01,
)
#: ``bench learn``'s names for the settings.
PRESETS: dict[str, MappoSettings] = {"tutorial": TUTORIAL, "tuned": TUNED}


@dataclass
class TrainedMappo:
    """What :func:`train_torchrl_mappo` returns."""

    policy: ProbabilisticActor
    """The trained policy (acts greedily under TorchRL's ``DETERMINISTIC`` exploration type)."""
    frames: int
    """Frames trained on."""
    wall_s: float
    """Seconds of the training loop (collection and updates; building the env and nets excluded)."""
    last_batch: TensorDictBase | None
    """The last collected batch (its training episodes)."""

    @property
    def fps(self) -> float:
        return self.frames / self.wall_s if self.wall_s > 0 else float("nan")


def build_mappo(
    env: EnvBase, settings: MappoSettings
) -> tuple[ProbabilisticActor, TensorDictModule]:
    """The tutorial's policy and centralized critic for ``env``'s ``"agent"`` group.

    Example:
        >>> from marlplug.envs import make_env
        >>> env = make_env("cooperative_navigation", agents=2, seed=0)
        >>> policy, critic = build_mappo(env, MappoSettings(agents=2, hidden=8))
        >>> policy(env.reset())[GROUP, "action"].shape
        torch.Size([2])
    """
    observation_dim = env.observation_spec[GROUP, "observation"].shape[-1]
    n_agents = len(env.group_map[GROUP])
    policy_net = MultiAgentMLP(
        n_agent_inputs=observation_dim,
        n_agent_outputs=env.full_action_spec[GROUP, "action"].space.n,
        n_agents=n_agents,
        centralized=False,
        share_params=settings.share_params,
        depth=settings.depth,
        num_cells=settings.hidden,
        activation_class=torch.nn.Tanh,
    )
    policy = ProbabilisticActor(
        TensorDictModule(
            policy_net, in_keys=[(GROUP, "observation")], out_keys=[(GROUP, "logits")]
        ),
        in_keys={"logits": (GROUP, "logits")},
        out_keys=[(GROUP, "action")],
        distribution_class=Categorical,
        return_log_prob=True,
        log_prob_key=(GROUP, "action_log_prob"),
    )
    critic_net = MultiAgentMLP(
        n_agent_inputs=observation_dim,
        n_agent_outputs=1,
        n_agents=n_agents,
        centralized=True,
        share_params=settings.share_params,
        depth=settings.depth,
        num_cells=settings.hidden,
        activation_class=torch.nn.Tanh,
    )
    critic = TensorDictModule(
        critic_net, in_keys=[(GROUP, "observation")], out_keys=[(GROUP, "state_value")]
    )
    return policy, critic


def mappo_loss(
    policy: ProbabilisticActor, critic: TensorDictModule, settings: MappoSettings
) -> ClipPPOLoss:
    """The tutorial's ``ClipPPOLoss`` with GAE, keys set for the ``"agent"`` group."""
    loss_module = ClipPPOLoss(
        actor_network=policy,
        critic_network=critic,
        clip_epsilon=settings.clip_epsilon,
        clip_value=settings.clip_value,
        entropy_coeff=settings.entropy_coeff,
        critic_coeff=settings.critic_coeff,
        loss_critic_type=settings.loss_critic_type,
        normalize_advantage=settings.normalize_advantage,
        # Statistics over batch and time, per agent (dim -2 of [batch, agents, 1]).
        normalize_advantage_exclude_dims=(-2,),
    )
    loss_module.set_keys(
        reward=(GROUP, "reward"),
        action=(GROUP, "action"),
        sample_log_prob=(GROUP, "action_log_prob"),
        value=(GROUP, "state_value"),
        done=(GROUP, "done"),
        terminated=(GROUP, "terminated"),
        advantage=(GROUP, "advantage"),
        value_target=(GROUP, "value_target"),
    )
    loss_module.make_value_estimator(
        ValueEstimators.GAE, gamma=settings.gamma, lmbda=settings.lmbda
    )
    return loss_module


def batch_sizes(settings: MappoSettings, frames: int) -> tuple[int, int]:
    """Frames per batch and minibatch size for a budget of ``frames``.

    A budget smaller than one batch trains on one batch of the budget (whole steps of every env
    copy), so tests can run the pipeline on a few hundred frames.

    Example:
        >>> batch_sizes(TUNED, 144_000), batch_sizes(TUNED, 202)
        ((2000, 400), (200, 200))
    """
    if frames < 1:
        raise ValueError(f"frames must be >= 1, got {frames}")
    copies = settings.num_envs
    frames_per_batch = min(settings.frames_per_batch, max(copies, frames // copies * copies))
    return frames_per_batch, min(settings.minibatch_size, frames_per_batch)


def train_torchrl_mappo(settings: MappoSettings, frames: int, seed: int) -> TrainedMappo:
    """Train on cooperative navigation (mpe) for at least ``frames`` frames, whole batches.

    Args:
        settings: :data:`TUTORIAL`, :data:`TUNED` or your own.
        frames: the frame budget, rounded up to whole batches (see :func:`batch_sizes`).
        seed: seeds the env and torch (network initialization, action sampling, minibatches).

    Example:
        >>> small = replace(TUNED, agents=2, frames_per_batch=100, num_envs=2, minibatch_size=50)
        >>> trained = train_torchrl_mappo(small, frames=100, seed=0)
        >>> trained.frames
        100
    """
    torch.manual_seed(seed)
    env = make_env(
        "cooperative_navigation",
        backend="mpe",
        agents=settings.agents,
        num_envs=settings.num_envs,
        seed=seed,
    )
    policy, critic = build_mappo(env, settings)
    loss_module = mappo_loss(policy, critic, settings)
    frames_per_batch, minibatch_size = batch_sizes(settings, frames)
    batches = -(-frames // frames_per_batch)
    collector = Collector(
        env,
        policy,
        frames_per_batch=frames_per_batch,
        total_frames=frames_per_batch * batches,
        auto_register_policy_transforms=False,
    )
    replay_buffer = ReplayBuffer(
        storage=LazyTensorStorage(frames_per_batch),
        sampler=SamplerWithoutReplacement(),
        batch_size=minibatch_size,
    )
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=settings.lr)
    trained, batch = 0, None
    start = time.perf_counter()
    for batch in collector:
        with torch.no_grad():
            loss_module.value_estimator(
                batch,
                params=loss_module.critic_network_params,
                target_params=loss_module.target_critic_network_params,
            )
        replay_buffer.extend(batch.reshape(-1))
        for _ in range(settings.epochs):
            for _ in range(frames_per_batch // minibatch_size):
                losses = loss_module(replay_buffer.sample())
                loss = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
                loss.backward()
                torch.nn.utils.clip_grad_norm_(loss_module.parameters(), settings.max_grad_norm)
                optimizer.step()
                optimizer.zero_grad()
        collector.update_policy_weights_()
        trained += batch.numel()
    wall_s = time.perf_counter() - start
    collector.shutdown()  # closes the env too
    return TrainedMappo(policy=policy, frames=trained, wall_s=wall_s, last_batch=batch)
