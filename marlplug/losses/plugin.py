"""marlplug's built-in losses components, registered through the `marlplug` entry point like any plugin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marlplug.hookspecs import hookimpl


@hookimpl
def marlplug_losses() -> Mapping[str, Any]:
    return {}
