"""marlplug-vmas: the paper's four scenarios on VMAS, and every VMAS scenario by its own name,
registered as ``vmas/<scenario>``.

The entry-point module stays light (no torch, no vmas): the hook names each scenario as a
``"module:attribute"`` reference that marlplug imports when it is first used, so ``marlplug
plugins`` starts fast. The names below are imported on first access too.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from marlplug import hookimpl
from marlplug_vmas.keywords import class_name, scenario_names

if TYPE_CHECKING:
    from marlplug_vmas.envs import (
        CooperativeNavigation,
        KeepAway,
        PhysicalDeception,
        PredatorPrey,
        VmasScenario,
    )
    from marlplug_vmas.transforms import GroupDones

_LAZY = {
    "CooperativeNavigation": "marlplug_vmas.envs",
    "KeepAway": "marlplug_vmas.envs",
    "PhysicalDeception": "marlplug_vmas.envs",
    "PredatorPrey": "marlplug_vmas.envs",
    "VmasScenario": "marlplug_vmas.envs",
    "GroupDones": "marlplug_vmas.transforms",
}

__all__ = [
    "CooperativeNavigation",
    "GroupDones",
    "KeepAway",
    "PhysicalDeception",
    "PredatorPrey",
    "VmasScenario",
    "marlplug_envs",
]


#: The paper's four scenarios, ported to VMAS with the mpe backend's definitions.
PAPER_SCENARIOS = {
    "vmas/cooperative_navigation": "marlplug_vmas.envs:CooperativeNavigation",
    "vmas/predator_prey": "marlplug_vmas.envs:PredatorPrey",
    "vmas/physical_deception": "marlplug_vmas.envs:PhysicalDeception",
    "vmas/keep_away": "marlplug_vmas.envs:KeepAway",
}


@hookimpl
def marlplug_envs() -> Mapping[str, Any]:
    """The paper's four scenarios and every VMAS scenario (``vmas.scenarios`` and
    ``vmas.mpe_scenarios``) on the ``vmas`` backend; a paper scenario keeps its name if VMAS ever
    ships one called the same."""
    try:
        names = scenario_names()
    except ModuleNotFoundError:
        # vmas is not installed: the paper's four stay listed, and using one says what is missing.
        names = {}
    native = {f"vmas/{name}": f"marlplug_vmas.native:{class_name(name)}" for name in names}
    return {**native, **PAPER_SCENARIOS}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'marlplug_vmas' has no attribute '{name}'")
