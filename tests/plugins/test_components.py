"""Components are checked at the plugin boundary: at load (``marlplug plugins`` shows the problem)
and when an env is built, with an error naming the component, its plugin, its distribution and the fix;
a bad component never takes a command down for every user."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

import pytest
import torch
from pydantic import BaseModel
from torchrl.data import Unbounded
from torchrl.envs import EnvBase, SerialEnv, Transform, TransformedEnv

import marlplug
from marlplug.config import Options, load_config
from marlplug.envs import checks, make_env
from marlplug.envs.mpe import CooperativeNavigation
from marlplug.errors import ConfigError, PluginError, UnknownComponentError
from marlplug.plugins import PluginInfo, PluginManager, get_plugin_manager

DISTRIBUTION = "marlplug-under-test"


@pytest.fixture
def register() -> Iterator[Callable[[object, str], PluginInfo]]:
    """Register plugin objects into the process-wide manager for one test (as a user's package would
    be), unregistering them afterwards."""
    manager = get_plugin_manager()
    names: list[str] = []

    def add(plugin: object, name: str) -> PluginInfo:
        names.append(name)
        return manager.register(plugin, name=name, distribution=DISTRIBUTION)

    yield add
    for name in names:
        manager.unregister(name)


def _hook(kind: str, provided: object) -> object:
    """A plugin object whose ``kind`` hook returns ``provided``."""
    hook_name = {"env": "marlplug_envs", "code": "marlplug_codes", "loss": "marlplug_losses"}[kind]

    class Plugin:
        pass

    def hook(self: object) -> object:
        return provided

    setattr(Plugin, hook_name, marlplug.hookimpl(hook))
    return Plugin()


# --------------------------------------------------------------------------- what hooks return


def test_hook_returning_a_list_is_reported_as_such(
    register: Callable[[object, str], PluginInfo],
) -> None:
    info = register(_hook("loss", ["my_loss"]), "listing")
    assert info.error == (
        "hook marlplug_losses returned list, expected a mapping from names to components, "
        "e.g. {'my_loss': MyLoss}"
    )
    assert "cka" in get_plugin_manager().registry("loss")


def test_env_key_without_backend_is_skipped_and_envs_still_lists(
    register: Callable[[object, str], PluginInfo], run_cli: Callable[..., Any]
) -> None:
    info = register(_hook("env", {"bad_env": CooperativeNavigation}), "no-backend")
    assert "env key 'bad_env' must be '<backend>/<scenario>'" in (info.error or "")
    result = run_cli("envs", "--json")
    assert result.exit_code == 0, result.err
    keys = {entry["registry_key"] for entry in json.loads(result.out)}
    assert "mpe/cooperative_navigation" in keys and not any("bad_env" in k for k in keys)


def test_non_class_code_is_skipped_and_codes_analyze_still_runs(
    register: Callable[[object, str], PluginInfo], run_cli: Callable[..., Any]
) -> None:
    def my_code() -> None: ...

    info = register(_hook("code", {"my_code": my_code}), "function-code")
    assert "code 'my_code' is the function" in (info.error or "")
    assert "not a class" in (info.error or "")
    result = run_cli("codes", "analyze", "-M", "2", "-N", "3", "--rounds", "10", "--json")
    assert result.exit_code == 0, result.err
    names = {code["name"] for code in json.loads(result.out)["codes"]}
    assert "mds" in names and "my_code" not in names
    # Asking for it by name says why it is missing, in one error naming the plugin.
    result = run_cli("codes", "analyze", "-M", "2", "-N", "3", "--codes", "my_code")
    assert result.exit_code == 2
    assert "plugin 'function-code'" in result.err and "not a class" in result.err


class _CrashingCode(marlplug.CodingScheme):  # type: ignore[name-defined,misc]
    """A code that raises a plain bug while building its matrix."""

    name = "crashing"

    def build_matrix(self, num_agents: int, num_learners: int, seed: int) -> Any:
        raise ZeroDivisionError("division by zero")


def test_code_that_crashes_is_skipped_by_codes_analyze_naming_its_plugin(
    register: Callable[[object, str], PluginInfo], run_cli: Callable[..., Any]
) -> None:
    register(_hook("code", {"crashing": _CrashingCode}), "crashing-code")
    result = run_cli("codes", "analyze", "-M", "2", "-N", "3", "--rounds", "10", "--json")
    assert result.exit_code == 0, result.err
    skipped = json.loads(result.out)["skipped"]
    assert "plugin 'crashing-code'" in skipped["crashing"]
    assert "ZeroDivisionError" in skipped["crashing"]
    result = run_cli("codes", "analyze", "-M", "2", "-N", "3", "--codes", "crashing")
    assert result.exit_code == 2
    assert f"distribution '{DISTRIBUTION}'" in result.err and "Traceback" not in result.err


# --------------------------------------------------------------------------- Options contracts


class _PlainOptions(BaseModel):
    agents: int = 2


class _PlainOptionsSpread(CooperativeNavigation):
    Options: ClassVar[Any] = _PlainOptions


def test_env_options_must_subclass_scenario_options(
    register: Callable[[object, str], PluginInfo],
) -> None:
    info = register(_hook("env", {"plain/spread": _PlainOptionsSpread}), "plain-options")
    assert "must subclass marlplug.envs.ScenarioOptions" in (info.error or "")
    with pytest.raises(UnknownComponentError) as caught:
        make_env("spread", backend="plain")
    message = str(caught.value)
    assert message.startswith("env.backend: unknown backend 'plain'")
    assert f"plugin 'plain-options' (distribution '{DISTRIBUTION}') was not registered" in message
    assert "class _PlainOptions(ScenarioOptions)" in message
    assert len(message.splitlines()) == 2


class _CoefOptions(Options):
    coef: float = 0.5
    power: int = 2


class _NoPowerLoss(torch.nn.Module):
    """Its Options has ``power``, which its constructor does not take."""

    Options = _CoefOptions

    def __init__(self, *, coef: float = 0.5) -> None:
        super().__init__()
        self.coef = coef


def test_loss_options_field_missing_from_constructor_is_rejected_at_load(
    register: Callable[[object, str], PluginInfo],
) -> None:
    info = register(_hook("loss", {"no_power": _NoPowerLoss}), "no-power")
    assert info.status == "error"
    assert "loss 'no_power': its Options field(s) 'power' are not parameters of" in (
        info.error or ""
    )
    with pytest.raises(ConfigError, match=r"(?s)unknown loss 'no_power'.*'power'"):
        load_config(overrides=["losses=[clip_ppo, no_power]"])


def test_strict_mode_refuses_a_bad_component() -> None:
    strict = PluginManager.from_entry_points(strict=True, disabled=set())
    with pytest.raises(PluginError, match=r"plugin 'no-power' .* 'power'"):
        strict.register(_hook("loss", {"no_power": _NoPowerLoss}), name="no-power")


def test_unknown_name_names_a_plugin_whose_hook_failed() -> None:
    class Raising:
        @marlplug.hookimpl
        def marlplug_losses(self) -> Mapping[str, Any]:
            raise RuntimeError("needs a GPU")

    manager = PluginManager.from_entry_points(strict=False, disabled=set())
    manager.register(Raising(), name="gpu-losses", distribution="marlplug-gpu")
    with pytest.raises(UnknownComponentError) as caught:
        manager.registry("loss").get_component("gpu_penalty", field="losses[1].name")
    first, second = str(caught.value).splitlines()
    assert first.startswith("losses[1].name: unknown loss 'gpu_penalty'; available: ")
    assert second == (
        "note: plugin 'gpu-losses' (distribution 'marlplug-gpu') has a failing hook: hook "
        "marlplug_losses raised RuntimeError: needs a GPU (see `marlplug plugins`)"
    )


# --------------------------------------------------------------------------- built envs


class _SerialSpread(CooperativeNavigation):
    """Returns a SerialEnv as is: its group_map is one dict per copy."""

    def _build(self, *, num_envs: int, seed: int | None, device: str) -> EnvBase:
        return SerialEnv(2, lambda: self._single(device))


class _WiderObservationSpec(Transform):
    """Announces one more observation feature than the env produces."""

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        old = observation_spec["agent", "observation"]
        observation_spec["agent", "observation"] = Unbounded(
            shape=(*old.shape[:-1], old.shape[-1] + 1), dtype=old.dtype, device=old.device
        )
        return observation_spec


class _LyingSpread(CooperativeNavigation):
    def _build(self, *, num_envs: int, seed: int | None, device: str) -> EnvBase:
        env = super()._build(num_envs=num_envs, seed=seed, device=device)
        return TransformedEnv(env, _WiderObservationSpec())


@pytest.fixture
def fresh_env_checks() -> Iterator[None]:
    saved = set(checks._checked)
    checks._checked.clear()
    yield
    checks._checked.clear()
    checks._checked.update(saved)


@pytest.mark.usefixtures("fresh_env_checks")
def test_env_returning_serial_env_names_env_plugin_and_fix(
    register: Callable[[object, str], PluginInfo],
) -> None:
    register(_hook("env", {"serial/spread": _SerialSpread}), "serial-env")
    with pytest.raises(PluginError) as caught:
        make_env("spread", backend="serial", agents=2)
    message = str(caught.value)
    assert message.startswith(
        f"env 'serial/spread' of plugin 'serial-env' (distribution '{DISTRIBUTION}'): "
        "env.group_map must be a dict of group name -> agent names, got "
    )
    assert "dict(<one copy>.group_map)" in message


@pytest.mark.usefixtures("fresh_env_checks")
def test_env_whose_specs_disagree_with_its_data_fails_at_build(
    register: Callable[[object, str], PluginInfo],
) -> None:
    register(_hook("env", {"lying/spread": _LyingSpread}), "lying-env")
    with pytest.raises(PluginError) as caught:
        make_env("spread", backend="lying", agents=2)
    message = str(caught.value)
    assert message.startswith(
        f"env 'lying/spread' of plugin 'lying-env' (distribution '{DISTRIBUTION}'): "
        "its data does not match its specs"
    )
    assert "check_env_specs" in message and len(message.splitlines()) == 1


@pytest.mark.usefixtures("fresh_env_checks")
def test_env_check_changes_neither_the_env_nor_global_random_state(
    register: Callable[[object, str], PluginInfo],
) -> None:
    """The same scenario as a plugin (checked) and built in (not checked): same data, same RNG."""
    register(_hook("env", {"copy/cooperative_navigation": CooperativeNavigation}), "copy-env")

    def run(backend: str) -> tuple[torch.Tensor, torch.Tensor]:
        torch.manual_seed(5)
        env = make_env("cooperative_navigation", backend=backend, agents=2, seed=3)
        rollout = env.rollout(4)
        return rollout["next", "agent", "observation"], torch.rand(3)

    builtin_data, builtin_after = run("mpe")
    plugin_data, plugin_after = run("copy")
    assert checks._checked, "the plugin env was checked"
    assert torch.equal(plugin_data, builtin_data)
    assert torch.equal(plugin_after, builtin_after)
