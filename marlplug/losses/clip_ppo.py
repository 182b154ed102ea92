"""The clipped-PPO terms of :class:`JointPPOLoss`, built from their settings.

:class:`ClipPPO` turns :class:`~marlplug.losses.ppo_options.PPOLossOptions` (declared there once;
``algorithm: {name: ppo, clip_range: 0.2, ...}`` in a config) into a :class:`JointPPOLoss`.
It is also the deprecated ``clip_ppo`` entry of ``losses:``, whose settings the config loader moves
to the algorithm (:mod:`marlplug.config.moved`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tensordict.nn import ProbabilisticTensorDictSequential, TensorDictModule
from torch import nn

from marlplug.losses.joint_ppo import JointPPOLoss
from marlplug.losses.ppo_options import PPOLossOptions


class ClipPPO:
    """Deprecated in `losses:`: the PPO loss terms are `algorithm` options (`algorithm: {name: ppo, clip_range: 0.1}`).

    Builds the clipped-PPO terms of every agent, a :class:`JointPPOLoss`, from
    :class:`PPOLossOptions`.

    Args:
        **settings: any :class:`PPOLossOptions` field (``clip_range``, ``clip_range_vf``,
            ``vf_coef``, ``ent_coef``, ``normalize_advantages``, ``loss_critic_type``); the others
            keep their defaults.

    Examples:
        >>> ClipPPO(clip_range=0.1).options.clip_range
        0.1
    """

    Options = PPOLossOptions
    #: In ``losses:`` this entry only carries settings; the config loader moves them here.
    moved_to_algorithm = "algorithm: {name: ppo, clip_range: ..., vf_coef: ...}"

    def __init__(self, **settings: Any) -> None:
        self.options = PPOLossOptions(**settings)

    def build(
        self,
        actor_network: Mapping[str, ProbabilisticTensorDictSequential],
        critic_network: Mapping[str, TensorDictModule],
        *,
        aux_losses: Mapping[str, nn.Module] | None = None,
    ) -> JointPPOLoss:
        """A :class:`JointPPOLoss` with these settings over the given networks and aux losses."""
        # Every setting explicit: marlplug's trainer keeps its own defaults whatever TorchRL's are.
        return JointPPOLoss(
            actor_network=actor_network,
            critic_network=critic_network,
            aux_losses=aux_losses,
            **self.options.loss_arguments(),
        )
