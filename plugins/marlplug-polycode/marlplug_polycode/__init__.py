"""A third-party coding scheme for marlplug: a real MDS code from Legendre polynomials.

The entry-point module stays light (no torch): the hook names the scheme as a ``"module:attribute"``
reference that marlplug imports when it is first used, so ``marlplug plugins`` starts fast.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import marlplug

if TYPE_CHECKING:
    from marlplug_polycode.legendre import LegendreCode

__all__ = ["LegendreCode", "marlplug_codes"]


@marlplug.hookimpl
def marlplug_codes() -> Mapping[str, Any]:
    return {"legendre": "marlplug_polycode.legendre:LegendreCode"}


def __getattr__(name: str) -> Any:
    # `from marlplug_polycode import LegendreCode` imports marlplug.coding (torch) only then.
    if name == "LegendreCode":
        return importlib.import_module("marlplug_polycode.legendre").LegendreCode
    raise AttributeError(f"module 'marlplug_polycode' has no attribute '{name}'")
