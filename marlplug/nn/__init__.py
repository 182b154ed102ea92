"""Per-agent actor/critic networks with stacked per-agent weights and exposed encoder features."""

from marlplug.nn.actor_critic import GroupActorCritic, GroupSpec, JointActorCritic
from marlplug.nn.critic_input import CriticInput
from marlplug.nn.obs_norm import (
    ObservationNormalized,
    ObservationNormalizer,
    observation_normalizers,
)
from marlplug.nn.stacked import StackedLinear, StackedMLP
from marlplug.nn.value_norm import ValueNormalizer, value_normalizer

__all__ = [
    "CriticInput",
    "GroupActorCritic",
    "GroupSpec",
    "JointActorCritic",
    "ObservationNormalized",
    "ObservationNormalizer",
    "StackedLinear",
    "StackedMLP",
    "ValueNormalizer",
    "observation_normalizers",
    "value_normalizer",
]
