"""Built-in environments (``marlplug_envs``): the paper's four scenarios on PettingZoo/mpe2."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marlplug.hookspecs import hookimpl


@hookimpl
def marlplug_envs() -> Mapping[str, Any]:
    """The paper's four scenarios on the ``mpe`` backend (PettingZoo/mpe2)."""
    return {
        "mpe/cooperative_navigation": "marlplug.envs.mpe:CooperativeNavigation",
        "mpe/predator_prey": "marlplug.envs.mpe:PredatorPrey",
        "mpe/physical_deception": "marlplug.envs.mpe:PhysicalDeception",
        "mpe/keep_away": "marlplug.envs.mpe:KeepAway",
    }
