"""The ``pettingzoo`` backend: mpe2's tasks by name, each through the env contract suite, and the
one-line errors for a bad task name or option."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from marlplug.envs import get_scenario, make_env, read_layout
from marlplug.envs.pettingzoo.mpe2_tasks import MPE2_TASKS
from marlplug.errors import ConfigError, UnknownComponentError
from marlplug.plugins import get_component
from marlplug.testing import check_env_scenario

#: Small options where the default team is large.
SMALL: dict[str, dict[str, Any]] = {
    "simple_tag": {"num_good": 1, "num_adversaries": 2},
    "simple_world_comm": {"num_good": 1, "num_adversaries": 2},
}


@pytest.mark.parametrize("task", [task.name for task in MPE2_TASKS])
def test_every_mpe2_task_meets_the_env_contract(task: str) -> None:
    scenario = get_scenario(task, backend="pettingzoo")
    assert get_component("env", f"pettingzoo/{task}") is scenario
    check_env_scenario(scenario, options=SMALL.get(task, {}), num_envs=(1, 2), steps=3)


def test_heterogeneous_agents_are_separate_groups() -> None:
    layout = read_layout(make_env("simple_speaker_listener", backend="pettingzoo", seed=0))
    sizes = {group.group: (group.observation_dim, group.n_actions) for group in layout}
    assert sizes == {"speaker": (3, 3), "listener": (11, 5)}
    layout = read_layout(make_env("simple_world_comm", backend="pettingzoo", seed=0))
    assert [(g.group, g.n_agents) for g in layout] == [
        ("leadadversary", 1),
        ("adversary", 3),
        ("agent", 2),
    ]


def test_options_come_from_the_task_signature() -> None:
    scenario = get_scenario("simple_tag", backend="pettingzoo")(
        num_good=2, num_adversaries=3, max_steps=7
    )
    assert scenario.options.agents == 5
    kwargs = scenario.task_options.task_kwargs()
    assert kwargs["max_cycles"] == 7 and kwargs["num_good"] == 2
    assert "render_mode" not in scenario.Options.model_fields
    env = scenario.make(seed=0)
    assert {group: len(names) for group, names in env.group_map.items()} == {
        "adversary": 3,
        "agent": 2,
    }
    assert env.rollout(10, break_when_any_done=False).shape[-1] == 10
    continuous = make_env("simple_push", backend="pettingzoo", continuous_actions=True, seed=0)
    assert read_layout(continuous).group("agent").continuous


def _error(name: str, **options: Any) -> str:
    with pytest.raises(ConfigError) as caught:
        make_env(name, backend="pettingzoo", **options)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_bad_input_is_one_line_naming_the_field_and_choices() -> None:
    assert _error("simple_tga").startswith(
        "env.name: unknown pettingzoo scenario 'simple_tga' (did you mean 'simple_tag'?)"
    )
    with pytest.raises(UnknownComponentError):
        make_env("simple_tag", backend="pettingzo")
    typo = _error("simple_tag", num_goods=2)
    assert "'num_goods'" in typo and "did you mean 'num_good'" in typo and "num_obstacles" in typo
    assert _error("simple_tag", num_good="two") == "env.num_good: expected an integer, got 'two'"
    fixed = _error("simple_reference", agents=3)
    assert "pettingzoo/simple_reference makes 2 agents" in fixed
    refused = _error("simple_adversary", N=0)
    assert (
        refused == "env: pettingzoo/simple_adversary does not build with N=0: ValueError: high <= 0"
    )


def test_marlplug_envs_lists_the_tasks(run_cli: Callable[..., Any]) -> None:
    result = run_cli("envs", "--json")
    assert result.exit_code == 0, result.err
    entries = {entry["registry_key"]: entry for entry in json.loads(result.out)}
    tag = {p["name"]: p["default"] for p in entries["pettingzoo/simple_tag"]["parameters"]}
    assert tag["agents"] == 4 and tag["num_good"] == 1 and tag["max_steps"] == 25
    assert "mpe2 simple_tag_v3" in entries["pettingzoo/simple_tag"]["summary"]
