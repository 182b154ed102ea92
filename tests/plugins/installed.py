"""Helpers for tests of installed plugins: pip-install a fixture package into a folder, and run the
CLI in a fresh process that sees it (entry points are read once per process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parent


def pip_install(package: Path, target: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(package),
        ],
        check=True,
        capture_output=True,
    )


def marlplug_with(site: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``marlplug ARGS`` in a fresh process that also sees the plugins installed in ``site``."""
    environment = {**os.environ, **env}
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    for name in ("MARLPLUG_STRICT_PLUGINS", "MARLPLUG_DISABLE_PLUGINS", "MARLPLUG_DEBUG"):
        if name not in env:
            environment.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "marlplug.cli.main", *args],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
        timeout=300,
    )
