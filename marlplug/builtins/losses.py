"""Built-in losses (``marlplug_losses``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marlplug.hookspecs import hookimpl


@hookimpl
def marlplug_losses() -> Mapping[str, Any]:
    """``clip_ppo``: the PPO terms' settings; ``redundancy``: the cross-agent redundancy penalty."""
    return {
        "clip_ppo": "marlplug.losses.clip_ppo:ClipPPO",
        "redundancy": "marlplug.losses.redundancy:RedundancyLoss",
    }
