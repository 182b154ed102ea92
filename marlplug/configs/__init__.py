"""The packaged configs: ``default.yaml`` (what ``marlplug train`` and ``marlplug config show`` use
without a CONFIG), ``spread_vmas.yaml`` (``spread_vmas_m8.yaml``: the same at 8 agents, with state
critics), ``maddpg_spread.yaml`` and ``coded_maddpg.yaml``."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DEFAULT_CONFIG = "default.yaml"


def default_config_path() -> Path:
    """The packaged default config (cooperative navigation, 3 agents).

    Examples:
        >>> default_config_path().name
        'default.yaml'
    """
    return Path(str(resources.files("marlplug.configs").joinpath(DEFAULT_CONFIG)))
