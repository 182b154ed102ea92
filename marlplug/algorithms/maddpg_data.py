"""Deprecated: the replay module's old name. Import from :mod:`marlplug.algorithms.replay`.

The algorithm-plugin guide of 0.1.0 taught ``from marlplug.algorithms.maddpg_data import
ReplayRollouts``; that keeps working, with a :class:`DeprecationWarning`, until 0.3.0 (the
deprecation policy in CHANGELOG.md).

Example:
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     from marlplug.algorithms.maddpg_data import ReplayRollouts
    >>> ReplayRollouts.__module__
    'marlplug.algorithms.replay'
    >>> print(caught[0].message)
    marlplug.algorithms.maddpg_data is deprecated and will be removed in marlplug 0.3.0; use marlplug.algorithms.replay
"""

from __future__ import annotations

from typing import Any

from marlplug.algorithms import replay
from marlplug.deprecation import warn_renamed

MADDPG_DATA_REMOVED_IN = "0.3.0"


def __getattr__(name: str) -> Any:
    value = getattr(replay, name)  # an unknown name raises replay's AttributeError
    warn_renamed(
        "marlplug.algorithms.maddpg_data",
        "marlplug.algorithms.replay",
        removed_in=MADDPG_DATA_REMOVED_IN,
    )
    return value
