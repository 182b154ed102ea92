"""marlplug plugin: a linear-CKA penalty on the similarity of agents' encoder features.

The entry-point module stays light (no torch): the hook names the loss as a ``"module:attribute"``
reference that marlplug imports when a config first uses it, so ``marlplug plugins`` starts fast.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import marlplug

if TYPE_CHECKING:
    from marlplug_cka.penalty import CKAOptions, CKAPenalty

__all__ = ["CKAOptions", "CKAPenalty", "marlplug_losses"]


@marlplug.hookimpl
def marlplug_losses() -> Mapping[str, Any]:
    return {"cka": "marlplug_cka.penalty:CKAPenalty"}


def __getattr__(name: str) -> Any:
    # `from marlplug_cka import CKAPenalty` imports torch only then.
    if name in {"CKAOptions", "CKAPenalty"}:
        return getattr(importlib.import_module("marlplug_cka.penalty"), name)
    raise AttributeError(f"module 'marlplug_cka' has no attribute '{name}'")
