"""Components given as ``"module:attribute"`` references: listed without importing, imported on first
use, and a broken reference is reported with the plugin that made it."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

import marlplug
from marlplug.errors import PluginError
from marlplug.plugins import PluginManager

# A module no test imports on its own: its presence in sys.modules says the reference was resolved.
LAZY_MODULE = "marlplug.coding.stragglers"


class LazyCodes:
    @marlplug.hookimpl
    def marlplug_codes(self) -> Mapping[str, Any]:
        return {
            "lazy_model": f"{LAZY_MODULE}:StragglerModel",
            "missing_module": "marlplug_no_such_module:Code",
        }


class MalformedCodes:
    @marlplug.hookimpl
    def marlplug_codes(self) -> Mapping[str, Any]:
        return {"no_colon": "marlplug.coding.codes.MDSCode"}


@pytest.fixture
def manager() -> Iterator[PluginManager]:
    yield PluginManager.from_entry_points(strict=False, disabled=set())


def test_reference_is_imported_on_first_use(
    manager: PluginManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, LAZY_MODULE, raising=False)
    manager.register(LazyCodes(), name="lazy")
    assert manager.plugins["lazy"].components == {"code": ["lazy_model", "missing_module"]}
    assert LAZY_MODULE not in sys.modules
    model_class = manager.registry("code")["lazy_model"]
    assert LAZY_MODULE in sys.modules
    assert model_class is sys.modules[LAZY_MODULE].StragglerModel


def test_broken_reference_names_the_plugin_and_target(manager: PluginManager) -> None:
    manager.register(LazyCodes(), name="lazy", distribution="lazy-dist")
    with pytest.raises(PluginError, match=r"code 'missing_module' of plugin 'lazy'.*'lazy-dist'"):
        manager.registry("code").get_component("missing_module")


def test_import_components_records_a_broken_reference(manager: PluginManager) -> None:
    manager.register(LazyCodes(), name="lazy")
    manager.import_components()
    error = manager.plugins["lazy"].error
    assert error is not None and "marlplug_no_such_module:Code" in error
    assert all(info.error is None for info in manager.report() if info.name != "lazy")


def test_malformed_reference_is_a_recorded_failure(manager: PluginManager) -> None:
    manager.register(MalformedCodes(), name="malformed")
    error = manager.plugins["malformed"].error
    assert error is not None and "not a 'module:attribute' reference" in error
    assert "no_colon" not in manager.registry("code")


def test_builtin_references_match_their_names(manager: PluginManager) -> None:
    # The built-in hooks spell each name next to an import path; every one must resolve to it.
    class_names = {
        "ppo": "PPO",
        "maddpg": "MADDPG",
        "iddpg": "IDDPG",
        "iql": "IQL",
        "vdn": "VDN",
        "qmix": "QMIX",
        "isac": "ISAC",
        "masac": "MASAC",
        "clip_ppo": "ClipPPO",
        "redundancy": "RedundancyLoss",
    }
    checked = 0
    for kind in ("code", "env", "loss", "algorithm"):
        registry = manager.registry(kind)
        for name in registry:
            entry = registry.entry(name)
            if entry.distribution != "marlplug":
                continue
            component = entry.obj
            if kind == "env":
                assert f"{component.backend}/{component.scenario}" == name
            elif kind == "code":
                assert component.name == name
            else:
                assert component.__name__ == class_names[name]
            checked += 1
    # codes; envs: the paper's four on mpe, eleven pettingzoo tasks, four gymnasium ones; losses;
    # algorithms
    assert checked == 6 + (4 + 11 + 4) + 2 + 8


class NotAClassCode:
    @marlplug.hookimpl
    def marlplug_codes(self) -> Mapping[str, Any]:
        return {"sqrt_code": "math:sqrt"}


def test_a_reference_to_a_non_class_is_checked_on_first_use_and_fails_alone() -> None:
    from click.testing import CliRunner

    from marlplug.cli.main import cli
    from marlplug.config.reference import render_reference
    from marlplug.testing import register_plugin

    with register_plugin(NotAClassCode(), name="not-a-class") as manager:
        with pytest.raises(PluginError, match=r"sqrt_code.*not a class.*not-a-class"):
            manager.registry("code")["sqrt_code"]
        # Every other code is still analyzed; the broken one is listed as skipped.
        result = CliRunner().invoke(
            cli, ["codes", "analyze", "-M", "2", "-N", "3", "--rounds", "5"]
        )
        assert result.exit_code == 0, result.output
        assert "skipped sqrt_code" in result.output and "mds" in result.output
        assert "Failed to load" in render_reference(manager)


class ExitingReferenceEnv:
    @marlplug.hookimpl
    def marlplug_envs(self) -> Mapping[str, Any]:
        return {"mpe/exits_on_import": "tests.plugins.exits_on_import:Scenario"}


def test_a_reference_whose_module_exits_fails_alone() -> None:
    from click.testing import CliRunner

    from marlplug.cli.main import cli
    from marlplug.testing import register_plugin

    with register_plugin(ExitingReferenceEnv(), name="exits") as manager:
        with pytest.raises(PluginError, match=r"SystemExit"):
            manager.registry("env")["mpe/exits_on_import"]
        result = CliRunner().invoke(cli, ["envs"])  # every other env is still listed
        assert result.exit_code == 0, result.output
        assert "skipped mpe/exits_on_import" in result.output
        assert "cooperative_navigation" in result.output
