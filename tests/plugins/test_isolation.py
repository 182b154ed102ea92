"""Plugin isolation with really installed packages: a plugin that calls ``sys.exit`` at import, or
whose names collide with built-ins, is reported while every other command keeps working."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.plugins.installed import marlplug_with


@pytest.fixture(scope="module")
def exiting_site(installed_site: Callable[[str], Path]) -> Path:
    return installed_site("exiting_plugin")


@pytest.fixture(scope="module")
def clash_site(installed_site: Callable[[str], Path]) -> Path:
    return installed_site("clash_plugin")


def _listing(stdout: str) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in json.loads(stdout)}


def test_plugin_calling_sys_exit_is_listed_as_failed(exiting_site: Path) -> None:
    result = marlplug_with(exiting_site, "plugins", "--json")
    assert result.returncode == 0, result.stderr
    listing = _listing(result.stdout)
    exiting = listing["exiting"]
    assert exiting["status"] == "error" and exiting["distribution"] == "marlplug-exiting"
    assert exiting["error"] == "import failed: SystemExit: the plugin called sys.exit(3)"
    assert "sys.exit(3)" in exiting["traceback"]
    assert all(listing[name]["status"] == "ok" for name in ("codes", "envs", "losses", "cka"))


def test_other_commands_run_and_warn_in_one_line(exiting_site: Path) -> None:
    result = marlplug_with(exiting_site, "config", "show", "--set", "losses=[clip_ppo, cka]")
    assert result.returncode == 0, result.stderr
    assert "name: cka" in result.stdout
    warnings = [line for line in result.stderr.splitlines() if "exiting" in line]
    assert warnings == [
        "warning: plugin 'exiting' (distribution 'marlplug-exiting'): import failed: SystemExit: "
        "the plugin called sys.exit(3) (see `marlplug plugins`)"
    ]


def test_using_a_component_of_a_failed_plugin_names_the_plugin(exiting_site: Path) -> None:
    result = marlplug_with(exiting_site, "config", "show", "--set", "losses=[clip_ppo, exit_loss]")
    assert result.returncode == 2
    error = [line for line in result.stderr.splitlines() if not line.startswith("warning:")]
    assert error[0].startswith("error: losses[1].name: unknown loss 'exit_loss'")
    assert error[1].startswith(
        "note: plugin 'exiting' (distribution 'marlplug-exiting') failed to load: import failed: "
        "SystemExit"
    )
    assert len(error) == 2 and "Traceback" not in result.stderr


def test_strict_mode_fails_the_plugins_command(exiting_site: Path) -> None:
    result = marlplug_with(exiting_site, "plugins", "--json", MARLPLUG_STRICT_PLUGINS="1")
    assert result.returncode == 2
    assert _listing(result.stdout)["exiting"]["status"] == "error"  # the report is still printed
    assert result.stderr.startswith("error: 1 plugin(s) with errors (exiting)")
    assert "Traceback" not in result.stderr


def test_debug_shows_the_failing_plugins_traceback(exiting_site: Path) -> None:
    result = marlplug_with(exiting_site, "--debug", "plugins")
    assert result.returncode == 0, result.stderr
    assert "Traceback (most recent call last)" in result.stderr
    assert "marlplug_exiting/__init__.py" in result.stderr and "sys.exit(3)" in result.stderr
    shown = marlplug_with(exiting_site, "config", "show", MARLPLUG_DEBUG="1")
    assert shown.returncode == 0, shown.stderr
    assert "marlplug_exiting/__init__.py" in shown.stderr


def test_disabled_plugin_is_shown_as_disabled(exiting_site: Path) -> None:
    result = marlplug_with(exiting_site, "plugins", MARLPLUG_DISABLE_PLUGINS="exiting")
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if "exiting" in line)
    assert "disabled" in row and "(MARLPLUG_DISABLE_PLUGINS)" in result.stdout
    assert "failed" not in result.stdout + result.stderr


def test_names_colliding_with_builtins_are_reported_and_builtins_win(clash_site: Path) -> None:
    result = marlplug_with(clash_site, "plugins", "--json")
    assert result.returncode == 0, result.stderr
    clash = _listing(result.stdout)["clash"]
    assert clash["status"] == "error"
    assert clash["components"] == {"code": [], "loss": ["clash_penalty"], "env": []}
    for kind, name, plugin in [
        ("code", "mds", "codes"),
        ("loss", "redundancy", "losses"),
        ("env", "mpe/cooperative_navigation", "envs"),
    ]:
        assert (
            f"{kind} name '{name}' is already registered by distribution 'marlplug' "
            f"(plugin '{plugin}'), so distribution 'marlplug-clash' (plugin 'clash') does not "
            "provide it" in clash["error"]
        )


def test_every_other_command_works_next_to_a_colliding_plugin(clash_site: Path) -> None:
    shown = marlplug_with(
        clash_site, "config", "show", "--set", "losses=[clip_ppo, redundancy, clash_penalty]"
    )
    assert shown.returncode == 0, shown.stderr
    assert "name: clash_penalty" in shown.stdout and "pair_reduction" in shown.stdout
    codes = marlplug_with(clash_site, "codes", "analyze", "-M", "2", "-N", "3", "--rounds", "10")
    assert codes.returncode == 0, codes.stderr
    assert "mds" in codes.stdout
