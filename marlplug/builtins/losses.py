"""Built-in losses (``marlplug_losses``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marlplug.hookspecs import hookimpl


@hookimpl
def marlplug_losses() -> Mapping[str, Any]:
    """``redundancy``: the cross-agent redundancy penalty; ``clip_ppo``: deprecated, the PPO terms'
    settings, now ``algorithm`` options (the config loader moves them)."""
    return {
        "clip_ppo": "marlplug.losses.clip_ppo:ClipPPO",
        "redundancy": "marlplug.losses.redundancy:RedundancyLoss",
    }
