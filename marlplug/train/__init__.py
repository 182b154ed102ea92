"""Training: the joint multi-agent PPO trainer, its config, stats, checkpoints and reporting.

``marlplug.config`` imports :mod:`marlplug.config.train`, so the heavier names below are imported
lazily (on first attribute access) to keep that import free of cycles.
"""

from __future__ import annotations

import importlib
from typing import Any

from marlplug.config.train import TrainSection

_LAZY = {
    "JointTrainerConfig": "marlplug.losses.ppo_options",
    "JointStats": "marlplug.runs.stats",
    "JointMultiAgentTrainer": "marlplug.train.trainer",
}

__all__ = ["TrainSection", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'marlplug.train' has no attribute '{name}'")
