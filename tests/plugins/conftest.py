"""Fixture plugin packages, really installed by pip into temporary folders (see installed.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.plugins.installed import FIXTURES, pip_install

# Packages that break on import on purpose (one calls sys.exit, one raises): pytest must not import them.
collect_ignore = ["broken_plugin", "exiting_plugin", "clash_plugin", "exits_on_import.py"]


@pytest.fixture(scope="session")
def installed_site(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``installed_site("broken_plugin")``: a folder holding that fixture package, pip-installed
    (kept off the shared venv); each package is installed once per session."""
    sites: dict[str, Path] = {}

    def install(name: str) -> Path:
        if name not in sites:
            target = tmp_path_factory.mktemp(f"site-{name}")
            pip_install(FIXTURES / name, target)
            sites[name] = target
        return sites[name]

    return install
