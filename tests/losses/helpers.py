"""Small synthetic models and minibatches with the nested-key structure of a multi-agent env."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDict

from marlplug.losses import JointPPOLoss
from marlplug.nn import CriticInput, GroupSpec, JointActorCritic

OBS, ACTIONS = 6, 4


def make_model(
    group_sizes: Sequence[tuple[str, int]] = (("agent", 3),),
    *,
    hidden: int = 16,
    features: int = 8,
    seed: int = 0,
    critic: CriticInput = "joint",
    value_norm: bool = False,
    obs_norm: bool = False,
    share_params: bool = False,
) -> JointActorCritic:
    torch.manual_seed(seed)
    specs = [
        GroupSpec(
            group=group,
            agent_names=tuple(f"{group}_{i}" for i in range(n)),
            observation_dim=OBS,
            n_actions=ACTIONS,
        )
        for group, n in group_sizes
    ]
    return JointActorCritic(
        specs,
        hidden_size=hidden,
        feature_dim=features,
        critic=critic,
        value_norm=value_norm,
        obs_norm=obs_norm,
        share_params=share_params,
    )


def make_batch(model: JointActorCritic, *, rows: int = 64, seed: int = 1) -> TensorDict:
    """A minibatch as a rollout would give it: actions and log-probs from the (old) policy."""
    generator = torch.Generator().manual_seed(seed)
    td = TensorDict({}, batch_size=[rows])
    for group, n_agents in model.group_sizes.items():
        td.set((group, "observation"), torch.randn(rows, n_agents, OBS, generator=generator))
    with torch.no_grad():
        torch.manual_seed(seed)
        model.policy(td)
        for critic in model.critics.values():
            critic(td)
    for group, n_agents in model.group_sizes.items():
        td.set((group, "advantage"), torch.randn(rows, n_agents, 1, generator=generator))
        value = td.get((group, "state_value"))
        td.set((group, "value_target"), value + torch.randn(rows, n_agents, 1, generator=generator))
        # Perturb the stored log-prob so that ratios differ from 1 and clipping happens.
        log_prob = td.get((group, "action_log_prob"))
        td.set(
            (group, "action_log_prob"),
            log_prob + 0.3 * torch.randn(log_prob.shape, generator=generator),
        )
    return td.exclude(*[(g, k) for g in model.group_sizes for k in ("features", "logits")])


def make_loss(model: JointActorCritic, **kwargs: object) -> JointPPOLoss:
    """A loss with marlplug's defaults (what the trainer uses), overridden by ``kwargs``."""
    kwargs = {"defaults": "marlplug", **kwargs}
    return JointPPOLoss(actor_network=model.actors, critic_network=model.critics, **kwargs)  # type: ignore[arg-type]
