"""Losses: JointPPOLoss, the auxiliary-loss contract and the built-in redundancy penalty."""

from marlplug.losses.aux import AuxLoss, AuxLossProtocol
from marlplug.losses.clip_ppo import ClipPPO
from marlplug.losses.joint_ppo import JointPPOLoss, sum_losses
from marlplug.losses.ppo_keys import MARLPLUG_DEFAULTS, TORCHRL_DEFAULTS
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
    "RedundancyLoss",
    "redundancy_all_pairs",
    "redundancy_pair_loop",
    "standardize_columns",
    "sum_losses",
]
