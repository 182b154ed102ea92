"""Losses: the joint PPO loss, its settings, value estimation and the auxiliary-loss contract.

- :class:`JointPPOLoss` (joint_ppo, ppo_terms, ppo_keys, torchrl_api): TorchRL's ``ClipPPOLoss`` for
  every agent of every group at once, plus auxiliary losses on every agent's encoder features;
- :class:`PPOLossOptions` (ppo_options): the PPO terms' settings, declared once; ``ClipPPO`` (the
  ``clip_ppo`` config entry) and :class:`JointTrainerConfig` (the joint trainer's settings) derive
  from it;
- :class:`JointGAE` (value): per-agent GAE over a rollout;
- :class:`AuxLoss` / :class:`AuxLossProtocol` (aux): what a plugin's auxiliary loss implements;
- :class:`RedundancyLoss` (redundancy): the built-in cross-agent redundancy penalty.
"""

from marlplug.losses.aux import AuxLoss, AuxLossProtocol
from marlplug.losses.clip_ppo import ClipPPO
from marlplug.losses.joint_ppo import JointPPOLoss, sum_losses
from marlplug.losses.ppo_keys import MARLPLUG_DEFAULTS, TORCHRL_DEFAULTS
from marlplug.losses.ppo_options import JointTrainerConfig, PPOLossOptions
from marlplug.losses.redundancy import (
    RedundancyLoss,
    redundancy_all_pairs,
    redundancy_pair_loop,
    standardize_columns,
)
from marlplug.losses.value import JointGAE

__all__ = [
    "MARLPLUG_DEFAULTS",
    "TORCHRL_DEFAULTS",
    "AuxLoss",
    "AuxLossProtocol",
    "ClipPPO",
    "JointGAE",
    "JointPPOLoss",
    "JointTrainerConfig",
    "PPOLossOptions",
    "RedundancyLoss",
    "redundancy_all_pairs",
    "redundancy_pair_loop",
    "standardize_columns",
    "sum_losses",
]
