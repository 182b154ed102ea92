"""marlplug's built-in losses, registered through the ``marlplug`` entry point like any plugin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marlplug.hookspecs import hookimpl


@hookimpl
def marlplug_losses() -> Mapping[str, Any]:
    """``clip_ppo``: the PPO terms' settings; ``redundancy``: the cross-agent redundancy penalty."""
    from marlplug.losses.clip_ppo import ClipPPO
    from marlplug.losses.redundancy import RedundancyLoss

    return {"clip_ppo": ClipPPO, "redundancy": RedundancyLoss}
