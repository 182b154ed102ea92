"""The packaged configs: ``default.yaml`` (what ``marlplug train`` and ``marlplug config show`` use
without a CONFIG), ``spread_vmas.yaml`` (``spread_vmas_m8.yaml`` and ``spread_vmas_m32.yaml``: the
same at 8 and 32 agents, with state critics and shared parameters), ``maddpg_spread.yaml`` and
``coded_maddpg.yaml``."""

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
