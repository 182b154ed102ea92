"""marlplug's built-in env components, registered through the ``marlplug`` entry point like any plugin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marlplug.hookspecs import hookimpl


@hookimpl
def marlplug_envs() -> Mapping[str, Any]:
    """The paper's four scenarios on the ``mpe`` backend (PettingZoo/mpe2)."""
    from marlplug.envs.mpe import CooperativeNavigation, KeepAway, PhysicalDeception, PredatorPrey

    scenarios = [CooperativeNavigation, PredatorPrey, PhysicalDeception, KeepAway]
    return {f"mpe/{cls.scenario}": cls for cls in scenarios}
