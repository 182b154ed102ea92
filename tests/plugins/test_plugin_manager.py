"""The plugin manager: registration, name clashes, broken plugins, strict mode and block lists."""

from __future__ import annotations

import importlib.metadata as metadata
import json
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

import marlplug
from marlplug.errors import PluginError
from marlplug.plugins import PluginManager, get_plugin_manager
from tests.plugins.installed import marlplug_with


class ExtraCode:
    """A coding scheme registered in-process for one test."""


class TwoCodes:
    @marlplug.hookimpl
    def marlplug_codes(self) -> Mapping[str, Any]:
        return {"test_only_code": ExtraCode}


@pytest.fixture
def manager() -> Iterator[PluginManager]:
    yield PluginManager.from_entry_points(strict=False, disabled=set())


def test_builtins_come_through_marlplug_entry_points(manager: PluginManager) -> None:
    builtin = [info for info in manager.report() if info.distribution == "marlplug"]
    assert {info.name for info in builtin} == {"algorithms", "codes", "envs", "losses"}
    assert all(info.error is None for info in builtin)


def test_registered_plugin_adds_and_removes_components(manager: PluginManager) -> None:
    manager.register(TwoCodes(), name="two-codes")
    assert manager.registry("code")["test_only_code"] is ExtraCode
    assert manager.plugins["two-codes"].hooks == ["marlplug_codes"]
    manager.unregister("two-codes")
    assert "test_only_code" not in manager.registry("code")


def test_name_clash_is_reported_and_the_first_registration_wins(manager: PluginManager) -> None:
    manager.register(TwoCodes(), name="first", distribution="dist-one")
    second = manager.register(TwoCodes(), name="second", distribution="dist-two")
    assert second.status == "error"
    assert re.search(r"'test_only_code'.*'dist-one'.*'dist-two'", second.error or "")
    assert manager.registry("code").entry("test_only_code").distribution == "dist-one"


def test_name_clash_is_an_error_in_strict_mode() -> None:
    strict = PluginManager.from_entry_points(strict=True, disabled=set())
    strict.register(TwoCodes(), name="first", distribution="dist-one")
    with pytest.raises(PluginError, match=r"'test_only_code'.*'dist-one'.*'dist-two'"):
        strict.register(TwoCodes(), name="second", distribution="dist-two")


def test_hook_that_raises_is_recorded(manager: PluginManager) -> None:
    class Raising:
        @marlplug.hookimpl
        def marlplug_losses(self) -> Mapping[str, Any]:
            raise RuntimeError("boom")

    manager.register(Raising(), name="raising")
    assert "RuntimeError: boom" in (manager.plugins["raising"].error or "")
    assert "cka" in manager.registry("loss")  # the others keep working


def test_strict_mode_turns_a_failing_hook_into_an_error() -> None:
    class Raising:
        @marlplug.hookimpl
        def marlplug_losses(self) -> Mapping[str, Any]:
            raise RuntimeError("boom")

    strict = PluginManager.from_entry_points(strict=True, disabled=set())
    with pytest.raises(PluginError, match="boom"):
        strict.register(Raising(), name="raising")


def test_misspelled_hook_is_rejected(manager: PluginManager) -> None:
    class Misspelled:
        @marlplug.hookimpl
        def marlplug_codez(self) -> Mapping[str, Any]:
            return {}

    info = manager.register(Misspelled(), name="misspelled")
    assert info.status == "error" and not info.loaded
    assert "marlplug_codez" in (info.error or "")


def test_disabled_plugin_is_blocked_and_listed() -> None:
    manager = PluginManager.from_entry_points(strict=False, disabled={"cka"})
    assert "cka" not in manager.registry("loss")
    assert manager.plugins["cka"].status == "disabled"
    assert manager.plugins["cka"].error is None  # disabled is not failed
    assert manager.failures() == []


def test_unknown_component_suggests_closest(manager: PluginManager) -> None:
    with pytest.raises(marlplug.UserError, match=r"unknown loss 'ckaa' \(did you mean 'cka'\?\)"):
        manager.registry("loss").get_component("ckaa")


def test_process_wide_manager_is_cached() -> None:
    assert get_plugin_manager() is get_plugin_manager()


@pytest.fixture(scope="module")
def broken_site(installed_site: Callable[[str], Path]) -> Path:
    """The broken plugin, really installed by pip into its own folder (kept off the shared venv)."""
    return installed_site("broken_plugin")


def test_broken_installed_plugin_is_listed_with_its_error(broken_site: Path) -> None:
    result = marlplug_with(broken_site, "plugins", "--json")
    assert result.returncode == 0, result.stderr
    listing = {entry["name"]: entry for entry in json.loads(result.stdout)}
    assert listing["broken"]["distribution"] == "marlplug-broken"
    assert "needs a dependency that is not installed" in listing["broken"]["error"]
    assert listing["cka"]["error"] is None and listing["cka"]["components"] == {"loss": ["cka"]}
    # Every other command still runs.
    shown = marlplug_with(broken_site, "config", "show", "--set", "losses=[clip_ppo, cka]")
    assert shown.returncode == 0, shown.stderr
    assert "name: cka" in shown.stdout


def test_strict_mode_fails_on_broken_installed_plugin(broken_site: Path) -> None:
    result = marlplug_with(broken_site, "config", "show", MARLPLUG_STRICT_PLUGINS="1")
    assert result.returncode == 2
    assert "plugin 'broken' from 'marlplug-broken' failed" in result.stderr
    assert "Traceback" not in result.stderr


def test_disable_env_var_skips_broken_plugin(broken_site: Path) -> None:
    result = marlplug_with(
        broken_site,
        "config",
        "show",
        MARLPLUG_STRICT_PLUGINS="1",
        MARLPLUG_DISABLE_PLUGINS="broken",
    )
    assert result.returncode == 0, result.stderr


def test_second_distribution_with_a_taken_entry_point_name_is_reported(
    manager: PluginManager,
) -> None:
    # Two installed distributions declaring entry point "cka": the second is listed, not loaded.
    second = metadata.EntryPoint(name="cka", value="marlplug.losses.plugin", group="marlplug")
    manager._load_entry_point(second)
    duplicate = manager.plugins["cka (?)"]
    assert not duplicate.loaded and duplicate.status == "error"
    assert "entry-point name 'cka' is already used by distribution 'marlplug-cka'" in (
        duplicate.error or ""
    )
    assert manager.registry("loss").entry("cka").distribution == "marlplug-cka"


def test_unknown_name_mentions_disabled_plugins() -> None:
    manager = PluginManager.from_entry_points(strict=False, disabled={"cka"})
    with pytest.raises(marlplug.ConfigError) as caught:
        manager.registry("loss").get_component("cka", field="losses[1].name")
    assert str(caught.value).splitlines() == [
        "losses[1].name: unknown loss 'cka'; available: clip_ppo, redundancy",
        "note: disabled by MARLPLUG_DISABLE_PLUGINS: cka (see `marlplug plugins`)",
    ]
