"""Per-agent actor/critic networks with stacked per-agent weights and exposed encoder features."""

from marlplug.models.actor_critic import (
    GroupActorCritic,
    GroupSpec,
    JointActorCritic,
    group_specs_from_env,
)
from marlplug.models.stacked import StackedLinear, StackedMLP

__all__ = [
    "GroupActorCritic",
    "GroupSpec",
    "JointActorCritic",
    "StackedLinear",
    "StackedMLP",
    "group_specs_from_env",
]
