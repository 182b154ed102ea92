"""SISL and MAgent2 tasks on the ``pettingzoo`` backend (extras ``sisl`` and ``magent2``): the env
contract suite on each, image observations flattened, dead agents masked, a missing suite named."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from marlplug.envs import get_scenario, make_env, read_layout
from marlplug.envs.pettingzoo import PettingZooTask, pettingzoo_scenario
from marlplug.errors import PluginError, UserError
from marlplug.testing import check_env_scenario

#: task -> (module its suite needs, small options, another seed gives another start)
SUITE_TASKS: dict[str, tuple[str, dict[str, Any], bool]] = {
    "pursuit": ("pymunk", {"x_size": 8, "y_size": 8, "n_evaders": 4, "n_pursuers": 3}, True),
    "multiwalker": ("Box2D", {"n_walkers": 2}, True),
    # Both armies start in fixed formations: the seed only drives later randomness.
    "battle": ("magent2", {"map_size": 12}, False),
}


@pytest.mark.parametrize("task", list(SUITE_TASKS))
def test_suite_task_meets_the_env_contract(task: str) -> None:
    module, options, seeds_differ = SUITE_TASKS[task]
    pytest.importorskip(module)
    check_env_scenario(
        get_scenario(task, backend="pettingzoo"),
        options=options,
        num_envs=(1, 2),
        steps=3,
        renders=False,  # marlplug draws mpe worlds; these render natively, not through it
        seeds_differ=seeds_differ,
    )


def test_gather_has_hundreds_of_agents_in_one_group() -> None:
    pytest.importorskip("magent2")
    scenario = get_scenario("gather", backend="pettingzoo")
    check_env_scenario(scenario, num_envs=(1,), steps=2, renders=False, seeds_differ=False)
    layout = read_layout(scenario().make(seed=0))
    assert [(g.group, g.n_agents, g.observation_dim) for g in layout] == [
        ("omnivore", 495, 15 * 15 * 5)
    ]


def test_image_views_are_flattened_and_dead_agents_masked() -> None:
    pytest.importorskip("magent2")
    env = make_env("battle", backend="pettingzoo", map_size=12, seed=0)
    assert env.group_map == {"red": ["red_0", "red_1"], "blue": ["blue_0", "blue_1"]}
    rollout = env.rollout(5, break_when_any_done=False)
    assert rollout["next", "red", "observation"].shape == (5, 2, 13 * 13 * 5)
    mask = rollout["next", "red", "mask"]  # the agents still in play (TorchRL's use_mask)
    assert mask.dtype == torch.bool and mask.shape == (5, 2)
    pytest.importorskip("Box2D")
    walkers = read_layout(make_env("multiwalker", backend="pettingzoo", n_walkers=2, seed=0))
    assert walkers.group("walker").continuous and walkers.group("walker").n_actions == 4


def test_action_kind_the_task_lacks_is_refused() -> None:
    pytest.importorskip("pymunk")
    with pytest.raises(UserError, match=r"env\.continuous_actions: this scenario only supports"):
        make_env("pursuit", backend="pettingzoo", continuous_actions=True)
    with pytest.raises(UserError, match="continuous_actions: this task only has continuous"):
        make_env("multiwalker", backend="pettingzoo", continuous_actions=False)


def test_a_suite_that_is_not_installed_is_one_line_naming_the_extra() -> None:
    task = PettingZooTask(
        name="lost_task",
        module="marlplug_no_such_suite.lost_task_v1",
        suite="lost",
        summary="a suite this machine lacks",
        extra="lost",
    )
    with pytest.raises(UserError) as caught:
        pettingzoo_scenario(task)
    assert str(caught.value) == (
        "env 'pettingzoo/lost_task' needs the lost suite (No module named "
        "'marlplug_no_such_suite'); pip install 'marlplug[lost]'"
    )
    assert not isinstance(caught.value, PluginError)
