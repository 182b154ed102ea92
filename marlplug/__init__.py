"""marlplug: plugin-based multi-agent RL on TorchRL — joint PPO with coupled losses, coded training.

The names below are the public API. The torch-heavy ones are imported on first use, so ``import
marlplug`` (which every plugin does, and ``marlplug --help``) stays cheap: it loads only the core.

Example:
    >>> import marlplug
    >>> env = marlplug.make_env("cooperative_navigation", agents=3, seed=0)
    >>> sorted(env.group_map)
    ['agent']
"""

from __future__ import annotations

import importlib
import os
from typing import Any

# MKL, torch's matrix products on x86, splits a float32 product differently on another thread
# count unless its strict reproducibility mode is on, and ``train.torch_threads: auto`` changes the
# count with the machine's load: on a 2-core Intel Xeon (family 6, model 167) a VMAS PPO run ended
# with other weights on 2 threads than on 1 (tests/train/test_threads.py). MKL reads this before
# the process's first product, so it is set here, on import, unless the user set it.
os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")

from marlplug.config import MarlplugConfig, load_config
from marlplug.errors import ConfigError, PluginError, UserError
from marlplug.hookspecs import hookimpl, hookspec
from marlplug.options import Options
from marlplug.plugins import get_component, get_plugin_manager

__version__ = "0.1.0"

_LAZY = {
    # environments
    "make_env": "marlplug.envs",
    "EnvScenario": "marlplug.envs",
    "JointEnv": "marlplug.envs",
    "JointEnvWrapper": "marlplug.envs",
    "JointStepResult": "marlplug.envs",
    # joint PPO
    "JointPPOLoss": "marlplug.losses",
    "AuxLoss": "marlplug.losses",
    "RedundancyLoss": "marlplug.losses",
    "JointActorCritic": "marlplug.nn",
    "JointMultiAgentTrainer": "marlplug.train",
    "JointTrainerConfig": "marlplug.train",
    "JointStats": "marlplug.train",
    # building models and losses from a config
    "build_trainer": "marlplug.build",
    "build_loss": "marlplug.build",
    "sum_losses": "marlplug.losses",
    # coding
    "CodingScheme": "marlplug.coding",
    "make_decoder": "marlplug.coding",
    "InvalidCodeError": "marlplug.coding",
    "NotDecodableError": "marlplug.coding",
    "UnknownComponentError": "marlplug.errors",
}

__all__ = [
    "ConfigError",
    "MarlplugConfig",
    "Options",
    "PluginError",
    "UserError",
    "get_component",
    "get_plugin_manager",
    "hookimpl",
    "hookspec",
    "load_config",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'marlplug' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(__all__)
