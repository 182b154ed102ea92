"""TorchRL's multi-agent PPO tutorial pipeline with ``ClipPPOLoss`` swapped for ``JointPPOLoss``.

:func:`tutorial` follows pytorch/rl tutorials/sphinx-tutorials/multiagent_ppo.py step by step (torchrl
0.14 names: ``Collector``, ``entropy_coeff``), at small sizes, on VMAS or PettingZoo (mpe2). The loss
class is the only thing a test changes; the aux-loss variant also names a features key and sums every
``loss_*`` entry, which docs/how-to/torchrl.md lists as the lines to change.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
from tensordict.nn import TensorDictModule
from tensordict.nn.distributions import NormalParamExtractor
from torchrl.collectors import Collector
from torchrl.data.replay_buffers import ReplayBuffer
from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement
from torchrl.data.replay_buffers.storages import LazyTensorStorage
from torchrl.envs import EnvBase, RewardSum, TransformedEnv
from torchrl.modules import MultiAgentMLP, ProbabilisticActor, TanhNormal
from torchrl.objectives import ClipPPOLoss, ValueEstimators

from marlplug.losses import JointPPOLoss, RedundancyLoss, sum_losses

# The tutorial's hyperparameters, at test sizes.
MAX_STEPS = 20
NUM_EPOCHS = 2
LR = 3e-4
MAX_GRAD_NORM = 1.0
CLIP_EPSILON = 0.2
GAMMA = 0.99
LMBDA = 0.9
ENTROPY_EPS = 1e-4


def make_env(kind: str, seed: int = 0) -> EnvBase:
    """The tutorial's env (VMAS navigation) or simple_spread through PettingZooWrapper."""
    if kind == "vmas":
        from torchrl.envs.libs.vmas import VmasEnv

        env: EnvBase = VmasEnv(
            scenario="navigation",
            num_envs=4,
            continuous_actions=True,
            max_steps=MAX_STEPS,
            n_agents=3,
            seed=seed,
        )
    else:
        from mpe2 import simple_spread_v3
        from torchrl.envs.libs.pettingzoo import PettingZooWrapper

        env = PettingZooWrapper(
            simple_spread_v3.parallel_env(N=3, max_cycles=MAX_STEPS, continuous_actions=True),
            seed=seed,
        )
    group = env.reward_key[0]
    return TransformedEnv(
        env, RewardSum(in_keys=[env.reward_key], out_keys=[(group, "episode_reward")])
    )


@dataclass
class TutorialRun:
    loss_module: Any
    policy: Any
    critic: Any
    losses: list[dict[str, float]] = field(default_factory=list)
    first_batch: Any = None
    start_params: list[torch.Tensor] = field(default_factory=list)


def tutorial(
    kind: str,
    loss_class: Callable[..., Any],
    *,
    iterations: int = 3,
    share_params: bool = True,
    aux: bool = False,
    seed: int = 0,
) -> TutorialRun:
    """The tutorial, step by step; ``loss_class`` is ``ClipPPOLoss`` or ``JointPPOLoss``."""
    torch.manual_seed(seed)
    env = make_env(kind, seed)
    group = env.reward_key[0]
    frames_per_batch = env.batch_size.numel() * MAX_STEPS if env.batch_size else 2 * MAX_STEPS
    minibatch_size = frames_per_batch // 2
    n_agents = env.full_action_spec_unbatched[env.action_key].shape[0]
    observation_size = env.observation_spec[group, "observation"].shape[-1]
    action_spec = env.full_action_spec_unbatched[env.action_key]

    policy_net = torch.nn.Sequential(
        MultiAgentMLP(
            n_agent_inputs=observation_size,
            n_agent_outputs=2 * action_spec.shape[-1],
            n_agents=n_agents,
            centralized=False,
            share_params=share_params,
            depth=2,
            num_cells=32,
            activation_class=torch.nn.Tanh,
        ),
        NormalParamExtractor(),
    )
    policy_module = TensorDictModule(
        policy_net, in_keys=[(group, "observation")], out_keys=[(group, "loc"), (group, "scale")]
    )
    policy = ProbabilisticActor(
        module=policy_module,
        spec=action_spec,
        in_keys=[(group, "loc"), (group, "scale")],
        out_keys=[env.action_key],
        distribution_class=TanhNormal,
        distribution_kwargs={"low": action_spec.space.low, "high": action_spec.space.high},
        return_log_prob=True,
    )
    critic_net = MultiAgentMLP(
        n_agent_inputs=observation_size,
        n_agent_outputs=1,
        n_agents=n_agents,
        centralized=True,
        share_params=share_params,
        depth=2,
        num_cells=32,
        activation_class=torch.nn.Tanh,
    )
    critic = TensorDictModule(
        module=critic_net, in_keys=[(group, "observation")], out_keys=[(group, "state_value")]
    )
    collector = Collector(
        env, policy, frames_per_batch=frames_per_batch, total_frames=frames_per_batch * iterations
    )
    replay_buffer = ReplayBuffer(
        storage=LazyTensorStorage(frames_per_batch),
        sampler=SamplerWithoutReplacement(),
        batch_size=minibatch_size,
    )
    # ---- the loss line (the only line the drop-in test changes) ----
    extra = {"aux_losses": {"redundancy": RedundancyLoss(coef=1.0)}} if aux else {}
    loss_module = loss_class(
        actor_network=policy,
        critic_network=critic,
        clip_epsilon=CLIP_EPSILON,
        entropy_coeff=ENTROPY_EPS,
        normalize_advantage=False,
        **extra,
    )
    keys = {"features": (group, "loc")} if aux else {}
    loss_module.set_keys(
        reward=env.reward_key,
        action=env.action_key,
        value=(group, "state_value"),
        done=(group, "done"),
        terminated=(group, "terminated"),
        **keys,
    )
    loss_module.make_value_estimator(ValueEstimators.GAE, gamma=GAMMA, lmbda=LMBDA)
    gae = loss_module.value_estimator
    optim = torch.optim.Adam(loss_module.parameters(), LR)
    run = TutorialRun(loss_module, policy, critic)
    run.start_params = [p.detach().clone() for p in loss_module.parameters()]

    for tensordict_data in collector:
        for flag in ("done", "terminated"):
            tensordict_data.set(
                ("next", group, flag),
                tensordict_data.get(("next", flag))
                .unsqueeze(-1)
                .expand(tensordict_data.get_item_shape(("next", env.reward_key))),
            )
        with torch.no_grad():
            gae(
                tensordict_data,
                params=loss_module.critic_network_params,
                target_params=loss_module.target_critic_network_params,
            )
        data_view = tensordict_data.reshape(-1)
        replay_buffer.extend(data_view)
        if run.first_batch is None:
            run.first_batch = data_view.clone()
        for _ in range(NUM_EPOCHS):
            for _ in range(frames_per_batch // minibatch_size):
                subdata = replay_buffer.sample()
                loss_vals = loss_module(subdata)
                if aux:  # the documented change: sum every loss_* entry
                    loss_value = sum_losses(loss_vals)
                else:
                    loss_value = (
                        loss_vals["loss_objective"]
                        + loss_vals["loss_critic"]
                        + loss_vals["loss_entropy"]
                    )
                loss_value.backward()
                torch.nn.utils.clip_grad_norm_(loss_module.parameters(), MAX_GRAD_NORM)
                optim.step()
                optim.zero_grad()
                run.losses.append(
                    {k: float(v.detach()) for k, v in loss_vals.items() if "loss" in k}
                )
        collector.update_policy_weights_()
    collector.shutdown()
    return run


def _moved(run: TutorialRun) -> bool:
    now = [p.detach() for p in run.loss_module.parameters()]
    return all(not torch.equal(a, b) for a, b in zip(run.start_params, now, strict=True))


@pytest.mark.parametrize("kind", ["vmas", "pettingzoo"])
def test_the_tutorial_trains_with_only_the_loss_class_changed(kind: str) -> None:
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="JointPPOLoss")
        run = tutorial(kind, JointPPOLoss)
    assert len(run.losses) == 3 * NUM_EPOCHS * 2
    assert all(torch.isfinite(torch.tensor(list(step.values()))).all() for step in run.losses)
    assert _moved(run)


@pytest.mark.parametrize("kind", ["vmas", "pettingzoo"])
def test_the_tutorial_with_the_redundancy_penalty_reaches_the_policy(kind: str) -> None:
    run = tutorial(kind, JointPPOLoss, aux=True)
    assert all(torch.isfinite(torch.tensor(list(step.values()))).all() for step in run.losses)
    assert all("loss_redundancy" in step for step in run.losses)
    assert _moved(run)
    out = run.loss_module(run.first_batch)
    policy_params = list(run.policy.parameters())
    grads = torch.autograd.grad(out["loss_redundancy"], policy_params, allow_unused=True)
    assert any(g is not None and torch.count_nonzero(g) > 0 for g in grads)


def test_joint_equals_clip_ppo_on_the_tutorial_batch() -> None:
    """Same data, same networks: JointPPOLoss with TorchRL's defaults gives ClipPPOLoss's terms."""
    run = tutorial("vmas", ClipPPOLoss, iterations=1)
    batch = run.first_batch
    clip = run.loss_module
    joint = JointPPOLoss(
        actor_network=run.policy,
        critic_network=run.critic,
        clip_epsilon=CLIP_EPSILON,
        entropy_coeff=ENTROPY_EPS,
        normalize_advantage=False,
    )
    joint.set_keys(value=("agents", "state_value"))
    torch.manual_seed(3)
    expected = clip(batch)
    torch.manual_seed(3)
    actual = joint(batch)
    for key in (
        "loss_objective",
        "loss_critic",
        "loss_entropy",
        "clip_fraction",
        "kl_approx",
        "entropy",
        "explained_variance",
        "ESS",
        "max_ratio",
        "mean_ratio",
    ):
        torch.testing.assert_close(actual[key], expected[key], rtol=1e-5, atol=1e-6)
    assert set(clip.out_keys) <= set(joint.out_keys)
