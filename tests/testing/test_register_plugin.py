"""register_plugin: an in-process plugin is visible to every lookup inside the block, and gone after
it, also when the block fails or the plugin is broken."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import pytest

import marlplug
from marlplug import load_config
from marlplug.coding import ReplicationCode
from marlplug.errors import PluginError
from marlplug.plugins import get_component, get_plugin_manager
from marlplug.testing import register_plugin


class ScratchCode(ReplicationCode):
    """A code registered for one test."""

    name = "test_only"


@marlplug.hookimpl
def marlplug_codes() -> Mapping[str, Any]:
    return {"test_only": ScratchCode}


PLUGIN = SimpleNamespace(marlplug_codes=marlplug_codes)


def _enter_and_leave(plugin: object, name: str = "test-plugin") -> None:
    with register_plugin(plugin, name=name):
        pass


def _registered() -> bool:
    manager = get_plugin_manager()
    return "test_only" in manager.registry("code") or "test-plugin" in manager.plugins


def test_components_are_visible_inside_and_gone_after() -> None:
    with register_plugin(PLUGIN, name="test-plugin") as manager:
        assert get_component("code", "test_only") is ScratchCode
        assert manager.plugins["test-plugin"].components == {"code": ["test_only"]}
        config = load_config(
            data={"algorithm": {"name": "maddpg"}, "coding": {"scheme": "test_only", "learners": 4}}
        )
        assert config.coding is not None and config.coding.scheme.name == "test_only"
    assert not _registered()
    with pytest.raises(marlplug.UserError, match="unknown code 'test_only'"):
        get_component("code", "test_only")


def test_removed_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError, match="inside"), register_plugin(PLUGIN, name="test-plugin"):
        raise RuntimeError("inside")
    assert not _registered()


def test_an_installed_plugin_name_is_refused() -> None:
    with pytest.raises(PluginError, match="'cka' is already registered"):
        _enter_and_leave(PLUGIN, name="cka")
    assert "cka" in get_plugin_manager().registry("loss")  # the installed one is untouched


def test_a_clashing_component_name_leaves_nothing_behind() -> None:
    @marlplug.hookimpl
    def marlplug_codes() -> Mapping[str, Any]:
        return {"test_only": ScratchCode, "mds": ScratchCode}

    with pytest.raises(PluginError, match="'mds' is already registered"):
        _enter_and_leave(SimpleNamespace(marlplug_codes=marlplug_codes))
    assert not _registered()
    assert get_component("code", "mds") is not ScratchCode


def test_a_hook_that_raises_is_an_error() -> None:
    @marlplug.hookimpl
    def marlplug_losses() -> Mapping[str, Any]:
        raise RuntimeError("boom")

    with pytest.raises(PluginError, match="plugin 'test-plugin': hook marlplug_losses raised"):
        _enter_and_leave(SimpleNamespace(marlplug_losses=marlplug_losses))
    assert not _registered()
