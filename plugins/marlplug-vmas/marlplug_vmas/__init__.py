"""marlplug-vmas: the paper's four scenarios on VMAS, registered as ``vmas/<scenario>``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marlplug import hookimpl
from marlplug_vmas.envs import (
    CooperativeNavigation,
    KeepAway,
    PhysicalDeception,
    PredatorPrey,
    VmasScenario,
)
from marlplug_vmas.transforms import GroupDones

__all__ = [
    "CooperativeNavigation",
    "GroupDones",
    "KeepAway",
    "PhysicalDeception",
    "PredatorPrey",
    "VmasScenario",
    "marlplug_envs",
]


@hookimpl
def marlplug_envs() -> Mapping[str, Any]:
    """The four scenarios on the ``vmas`` backend."""
    scenarios = [CooperativeNavigation, PredatorPrey, PhysicalDeception, KeepAway]
    return {f"vmas/{cls.scenario}": cls for cls in scenarios}
