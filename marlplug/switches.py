"""On/off switches read from ``MARLPLUG_*`` environment variables, all parsed the same way.

``1``, ``true``, ``yes`` and ``on`` mean on; ``0``, ``false``, ``no`` and ``off`` mean off (any case,
surrounding spaces ignored); unset, empty or anything else leaves the switch at its default.
"""

from __future__ import annotations

import os

_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"0", "false", "no", "off"})


def env_flag(name: str, *, default: bool = False) -> bool:
    """The switch ``name`` from the environment.

    Examples:
        >>> os.environ["MARLPLUG_EXAMPLE"] = " Off "
        >>> env_flag("MARLPLUG_EXAMPLE", default=True)
        False
        >>> env_flag("MARLPLUG_UNSET_EXAMPLE", default=True)
        True
        >>> del os.environ["MARLPLUG_EXAMPLE"]
    """
    value = os.environ.get(name, "").strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    return default
