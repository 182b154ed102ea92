"""The ``clip_ppo`` config entry: the PPO terms' settings, under the Rust reference's names.

``losses: [{name: clip_ppo, clip_range: 0.2, ...}]`` configures the per-agent clipped-PPO part of
:class:`JointPPOLoss`; :meth:`ClipPPO.build` maps these names onto TorchRL's.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field
from tensordict.nn import ProbabilisticTensorDictSequential, TensorDictModule
from torch import nn

from marlplug.config import Options as ConfigOptions
from marlplug.losses.joint_ppo import CriticLossType, JointPPOLoss


class ClipPPO:
    """Settings of the clipped-PPO terms (defaults: the Rust ``JointTrainerConfig``).

    Args:
        clip_range: PPO ratio clip range ε; typical values 0.1-0.3.
        clip_range_vf: clip value predictions to ``old ± clip_range_vf``; ``None`` disables it.
        vf_coef: weight of the value loss.
        ent_coef: weight of the entropy bonus.
        normalize_advantages: standardize advantages per agent on each minibatch.
        loss_critic_type: distance used by the value loss.

    Examples:
        >>> ClipPPO(clip_range=0.1).clip_range
        0.1
    """

    class Options(ConfigOptions):
        """``losses: [{name: clip_ppo, ...}]``."""

        clip_range: float = Field(0.2, gt=0.0, lt=1.0, description="PPO ratio clip range.")
        clip_range_vf: float | None = Field(
            0.2, gt=0.0, description="Value clip range around the old value; null disables it."
        )
        vf_coef: float = Field(0.5, ge=0.0, description="Weight of the value loss.")
        ent_coef: float = Field(0.01, ge=0.0, description="Weight of the entropy bonus.")
        normalize_advantages: bool = Field(True, description="Standardize advantages per agent.")
        loss_critic_type: CriticLossType = Field("l2", description="l2, l1 or smooth_l1.")

    def __init__(
        self,
        *,
        clip_range: float = 0.2,
        clip_range_vf: float | None = 0.2,
        vf_coef: float = 0.5,
        ent_coef: float = 0.01,
        normalize_advantages: bool = True,
        loss_critic_type: CriticLossType = "l2",
    ) -> None:
        self.clip_range = clip_range
        self.clip_range_vf = clip_range_vf
        self.vf_coef = vf_coef
        self.ent_coef = ent_coef
        self.normalize_advantages = normalize_advantages
        self.loss_critic_type: CriticLossType = loss_critic_type

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
            defaults="marlplug",
            clip_epsilon=self.clip_range,
            clip_value=False if self.clip_range_vf is None else self.clip_range_vf,
            entropy_coeff=self.ent_coef,
            critic_coeff=self.vf_coef,
            normalize_advantage=self.normalize_advantages,
            normalize_advantage_exclude_dims=(-2,),
            loss_critic_type=self.loss_critic_type,
            reduction="agent_sum",
        )
