"""Bad env parameters are config errors that name the field, from make_env and from a config file."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from marlplug import ConfigError, MarlplugConfig, hookimpl, load_config
from marlplug.config import validate_options
from marlplug.config.checks import ConfigWarning
from marlplug.envs import get_scenario, make_env
from marlplug.envs.mpe import CooperativeNavigation
from marlplug.envs.options import ScenarioOptions
from marlplug.errors import UnknownComponentError
from marlplug.plugins import get_plugin_manager


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        (
            "keep_away",
            {"agents": 4, "adversaries": 4},
            "env.adversaries: must be fewer than agents (4)",
        ),
        ("predator_prey", {"agents": 3, "adversaries": 5}, "env.adversaries: must be fewer"),
        ("cooperative_navigation", {"agents": 0}, "env.agents: "),
        ("keep_away", {"adversaries": 0, "agents": 3}, "env.adversaries: "),
        (
            "physical_deception",
            {"agents": 5, "adversaries": 2},
            "env.adversaries: physical_deception",
        ),
        ("physical_deception", {"agents": 1}, "env.agents: "),
        ("keep_away", {"landmarks": 0}, "env.landmarks: "),
        ("keep_away", {"max_steps": 0}, "env.max_steps: "),
        ("keep_away", {"continuous_actions": "sometimes"}, "env.continuous_actions: expected true"),
        (
            "keep_away",
            {"agent": 3},
            "env.agent: unknown field 'agent' in env 'keep_away' (did you mean 'agents'?)",
        ),
    ],
)
def test_bad_options_name_the_field(name: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match="^" + re.escape(message)):
        make_env(name, **options)


def test_unknown_backend_and_scenario() -> None:
    with pytest.raises(
        ConfigError, match=r"^env.backend: unknown backend 'mpee' \(did you mean 'mpe'"
    ):
        make_env("keep_away", backend="mpee")
    with pytest.raises(ConfigError, match=r"^env.name: unknown mpe scenario 'keep_awy'.*keep_away"):
        make_env("keep_awy")


def test_bad_num_envs() -> None:
    with pytest.raises(ConfigError, match="num_envs"):
        make_env("keep_away", num_envs=0)


class _DiscreteOnlyOptions(ScenarioOptions):
    supports_continuous_actions: ClassVar[bool] = False


class _DiscreteOnlySpread(CooperativeNavigation):
    Options = _DiscreteOnlyOptions
    scenario = "discrete_only_spread"


class _DiscreteOnlyPlugin:
    @hookimpl
    def marlplug_envs(self) -> dict[str, Any]:
        return {"mpe/discrete_only_spread": _DiscreteOnlySpread}


@pytest.fixture
def discrete_only() -> Iterator[None]:
    manager = get_plugin_manager()
    manager.register(_DiscreteOnlyPlugin(), name="test-discrete-only")
    yield
    manager.unregister("test-discrete-only")


@pytest.mark.usefixtures("discrete_only")
def test_continuous_actions_where_unsupported() -> None:
    assert make_env("discrete_only_spread", agents=2).full_action_spec["agent", "action"].shape == (
        2,
    )
    with pytest.raises(ConfigError, match=r"^env.continuous_actions: this scenario only supports"):
        make_env("discrete_only_spread", continuous_actions=True)


@pytest.mark.usefixtures("discrete_only")
def test_a_scenario_without_entity_lists_refuses_nearest_naming_the_field() -> None:
    with pytest.raises(
        ConfigError, match=r"^env.entity_order: unknown field 'entity_order' in env 'discrete_only_"
    ):
        make_env("discrete_only_spread", agents=2, entity_order="nearest")


def _env_from_config(data: dict[str, Any]) -> Any:
    config = validate_options(MarlplugConfig, data)
    assert isinstance(config, MarlplugConfig)
    return get_scenario(config.env.name, backend=config.env.backend)(**config.env.raw_options)


def test_config_file_env_section() -> None:
    scenario = _env_from_config({"env": {"name": "keep_away", "agents": 8, "adversaries": 4}})
    assert (scenario.options.agents, scenario.options.adversaries) == (8, 4)
    with pytest.raises(ConfigError, match=r"^env.adversaries: must be fewer than agents \(8\)"):
        _env_from_config({"env": {"name": "keep_away", "agents": 8, "adversaries": 8}})
    with pytest.raises(ConfigError, match=r"^env.backend: unknown backend 'gym'"):
        _env_from_config({"env": {"name": "keep_away", "backend": "gym"}})


# --------------------------------------------------------------------------- unknown names: one family

_UNKNOWN = r"^{field}: unknown {what} '{name}' \(did you mean '{close}'\?\); available: "


@pytest.mark.parametrize(
    ("overrides", "field", "what", "name", "close"),
    [
        (["env.name=keep_awy"], r"env\.name", "mpe scenario", "keep_awy", "keep_away"),
        (["env.backend=vmass"], r"env\.backend", "backend", "vmass", "vmas"),
        (
            ["losses=[clip_ppo, redundancyy]"],
            r"losses\[1\]\.name",
            "loss",
            "redundancyy",
            "redundancy",
        ),
        (["algorithm.name=maddgp"], r"algorithm\.name", "algorithm", "maddgp", "maddpg"),
        (
            ["coding.scheme=mdss", "coding.learners=4", "algorithm.name=maddpg"],
            r"coding\.scheme\.name",
            "code",
            "mdss",
            "mds",
        ),
    ],
)
def test_every_unknown_name_raises_one_error_class_in_one_format(
    overrides: list[str], field: str, what: str, name: str, close: str
) -> None:
    with pytest.raises(UnknownComponentError) as caught:
        load_config(overrides=overrides)
    assert isinstance(caught.value, ConfigError)
    assert re.match(
        _UNKNOWN.format(field=field, what=what, name=name, close=close), str(caught.value)
    )


def test_unknown_env_from_make_env_is_the_same_error() -> None:
    with pytest.raises(UnknownComponentError, match=r"^env\.name: unknown mpe scenario 'keep_awy'"):
        make_env("keep_awy")
    with pytest.raises(UnknownComponentError, match=r"^env\.backend: unknown backend 'mpee'"):
        get_scenario("keep_away", backend="mpee")


@pytest.mark.parametrize("override", ["env.name=keep_awy", "losses=[clip_ppo, redundancyy]"])
def test_cli_prints_one_line_and_exits_2_for_any_unknown_name(
    run_cli: Callable[..., Any], override: str
) -> None:
    result = run_cli("config", "show", "--set", override)
    assert result.exit_code == 2
    assert len(result.err.strip().splitlines()) == 1, result.err
    assert re.match(r"error: (env\.name|losses\[1\]\.name): unknown ", result.err)


@pytest.mark.usefixtures("discrete_only")
def test_another_env_on_the_command_line_leaves_out_what_only_the_file_env_takes(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    # This file lists entities nearest first; this plugin scenario lists none.
    config = tmp_path / "nearest.yaml"
    config.write_text("env: {name: cooperative_navigation, entity_order: nearest}\n")
    swap = [str(config), "--set", "env.name=discrete_only_spread"]
    with pytest.warns(ConfigWarning) as caught:
        result = run_cli("config", "show", *swap)
    assert result.exit_code == 0, result.err
    assert [str(warning.message) for warning in caught] == [
        "env.entity_order: left out: env 'discrete_only_spread' does not take it "
        "(it came with the config file's env 'cooperative_navigation')"
    ]
    assert "discrete_only_spread" in result.out and "entity_order" not in result.out
    # Nearest first is a run default of the scenarios that take it, not a field of the packaged
    # default: swapping its env leaves nothing out.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bare = run_cli("config", "show", "--set", "env.name=discrete_only_spread")
    assert bare.exit_code == 0 and "entity_order" not in bare.out, bare.err
    # Given on the command line, the field is the user's: still refused, naming it.
    refused = run_cli("config", "show", *swap, "--set", "env.entity_order=nearest")
    assert refused.exit_code == 2
    assert refused.err.startswith("error: env.entity_order: unknown field 'entity_order'")
