"""The ``clip_ppo`` config entry: the PPO terms' settings, under the Rust reference's names.

``losses: [{name: clip_ppo, clip_range: 0.2, ...}]`` configures the per-agent clipped-PPO part of
:class:`JointPPOLoss`; its options are :class:`~marlplug.losses.ppo_options.PPOLossOptions` (declared
there once) and :meth:`ClipPPO.build` maps them onto TorchRL's names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tensordict.nn import ProbabilisticTensorDictSequential, TensorDictModule
from torch import nn

from marlplug.losses.joint_ppo import JointPPOLoss
from marlplug.losses.ppo_options import PPOLossOptions


class ClipPPO:
    """The clipped-PPO terms of every agent: builds a JointPPOLoss from its PPOLossOptions.

    Args:
        **settings: any :class:`PPOLossOptions` field (``clip_range``, ``clip_range_vf``,
            ``vf_coef``, ``ent_coef``, ``normalize_advantages``, ``loss_critic_type``); the others
            keep their defaults.

    Examples:
        >>> ClipPPO(clip_range=0.1).options.clip_range
        0.1
    """

    Options = PPOLossOptions

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
