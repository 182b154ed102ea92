"""marlplug's built-in coding schemes, registered through the `marlplug` entry point like any plugin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marlplug.coding.codes import (
    LDPCCode,
    MDSCode,
    RandomSparseCode,
    ReplicationCode,
    UncodedScheme,
    VandermondeCode,
)
from marlplug.hookspecs import hookimpl


@hookimpl
def marlplug_codes() -> Mapping[str, Any]:
    schemes = [UncodedScheme, ReplicationCode, MDSCode, VandermondeCode, RandomSparseCode, LDPCCode]
    return {scheme.name: scheme for scheme in schemes}
