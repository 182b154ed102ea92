"""marlplug: plugin-based multi-agent RL on TorchRL — joint PPO with coupled losses, coded training."""

from marlplug.config import MarlplugConfig, Options, load_config
from marlplug.errors import ConfigError, PluginError, UserError
from marlplug.hookspecs import hookimpl, hookspec
from marlplug.plugins import get_component, get_plugin_manager

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
]
__version__ = "0.1.0"
