"""A group's policy head and the probabilistic actor around its encoder: a categorical over
discrete actions (masked where the env writes an ``action_mask``) or a TanhNormal over bounded
continuous ones.

The keys inside a group live here, shared with :class:`marlplug.losses.JointPPOLoss`'s defaults.
"""

from __future__ import annotations

import torch
from tensordict.nn import (
    InteractionType,
    TensorDictModule,
    TensorDictModuleBase,
    TensorDictSequential,
)
from torch import nn
from torchrl.modules import NormalParamExtractor, ProbabilisticActor, TanhNormal

from marlplug.envs.layout import GroupLayout
from marlplug.nn.rollout_policy import categorical_distribution
from marlplug.nn.stacked import StackedLinear

#: Key names inside a group, shared with :class:`marlplug.losses.JointPPOLoss`'s defaults.
OBSERVATION = "observation"
FEATURES = "features"
LOGITS = "logits"
LOC = "loc"
SCALE = "scale"
ACTION = "action"
ACTION_LOG_PROB = "action_log_prob"
STATE_VALUE = "state_value"


def policy_actor(
    spec: GroupLayout, encoder: TensorDictModuleBase, *, feature_dim: int, samples: bool
) -> tuple[TensorDictModule, ProbabilisticActor]:
    """``(policy head, actor)`` of one group: the head reads ``(group, "features")``, ``feature_dim``
    wide; the actor runs ``encoder`` then the head and writes the action and its log-probability.

    Args:
        spec: the group's agents, sizes and action space.
        encoder: writes the group's features.
        feature_dim: their width.
        samples: a discrete actor samples unless told otherwise (``set_exploration_type``), as the
            rollout policies do; otherwise it takes the mode (TorchRL's default). A continuous
            actor always samples unless told otherwise.

    Examples:
        >>> from tensordict import TensorDict
        >>> spec = GroupLayout(group="agent", agent_names=("a", "b"), observation_dim=4, n_actions=3)
        >>> encoder = TensorDictModule(nn.Linear(4, 8), in_keys=[("agent", "observation")],
        ...                            out_keys=[("agent", "features")])
        >>> head, actor = policy_actor(spec, encoder, feature_dim=8, samples=False)
        >>> td = actor(TensorDict({("agent", "observation"): torch.zeros(5, 2, 4)}, batch_size=[5]))
        >>> head.out_keys, td["agent", "action"].shape, td["agent", "action_log_prob"].shape
        ([('agent', 'logits')], torch.Size([5, 2]), torch.Size([5, 2]))
    """
    group = spec.group
    if spec.continuous:
        # Like TorchRL's MAPPO tutorial for VMAS: loc and scale per action dimension, a
        # TanhNormal squashed into the env's action bounds.
        head = TensorDictModule(
            nn.Sequential(
                StackedLinear(
                    n_agents=spec.n_agents, in_features=feature_dim, out_features=2 * spec.n_actions
                ),
                NormalParamExtractor(),
            ),
            in_keys=[(group, FEATURES)],
            out_keys=[(group, LOC), (group, SCALE)],
        )
        actor = ProbabilisticActor(
            TensorDictSequential(encoder, head),
            in_keys={"loc": (group, LOC), "scale": (group, SCALE)},
            out_keys=[(group, ACTION)],
            distribution_class=TanhNormal,
            distribution_kwargs={
                "low": torch.tensor(spec.action_low),
                "high": torch.tensor(spec.action_high),
            },
            return_log_prob=True,
            log_prob_key=(group, ACTION_LOG_PROB),
            # Sample unless told otherwise (set_exploration_type), as the discrete
            # CategoricalRolloutPolicy does; TorchRL's default outside a collector is the mode.
            default_interaction_type=InteractionType.RANDOM,
        )
        return head, actor
    head = TensorDictModule(
        StackedLinear(n_agents=spec.n_agents, in_features=feature_dim, out_features=spec.n_actions),
        in_keys=[(group, FEATURES)],
        out_keys=[(group, LOGITS)],
    )
    actor = ProbabilisticActor(
        TensorDictSequential(encoder, head),
        **categorical_distribution(group, masked=spec.action_mask),
        out_keys=[(group, ACTION)],
        return_log_prob=True,
        log_prob_key=(group, ACTION_LOG_PROB),
        default_interaction_type=InteractionType.RANDOM
        if samples
        else InteractionType.DETERMINISTIC,
    )
    return head, actor
