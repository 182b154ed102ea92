"""marlplug's built-in algorithms components, registered through the `marlplug` entry point like any plugin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marlplug.hookspecs import hookimpl


@hookimpl
def marlplug_algorithms() -> Mapping[str, Any]:
    """``ppo``: joint multi-agent PPO."""
    from marlplug.algorithms.maddpg import MADDPG
    from marlplug.algorithms.ppo import PPO

    return {"ppo": PPO, "maddpg": MADDPG}
