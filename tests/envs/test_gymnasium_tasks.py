"""The ``gymnasium`` backend: LBF and RWARE by their Gymnasium ids (extras ``lbf`` and ``rware``),
each through the env contract suite, LBF's valid actions as ``action_mask``, bad input in one line."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from marlplug.envs import get_scenario, make_env, read_layout
from marlplug.errors import ConfigError
from marlplug.plugins import get_component
from marlplug.testing import check_env_scenario

#: task id -> (package, small options)
TASKS: dict[str, tuple[str, dict[str, Any]]] = {
    "Foraging-8x8-2p-2f-coop-v3": ("lbforaging", {"max_steps": 10}),
    "Foraging-10x10-3p-3f-v3": ("lbforaging", {"max_steps": 10}),
    "rware-tiny-2ag-v2": ("rware", {"max_steps": 10}),
    "rware-tiny-4ag-v2": ("rware", {"max_steps": 10}),
}


@pytest.mark.parametrize("task", list(TASKS))
def test_every_task_meets_the_env_contract(task: str) -> None:
    package, options = TASKS[task]
    pytest.importorskip(package)
    scenario = get_scenario(task, backend="gymnasium")
    assert get_component("env", f"gymnasium/{task}") is scenario
    check_env_scenario(scenario, options=options, num_envs=(1, 2), steps=3, renders=False)


def test_lbf_valid_actions_are_the_action_mask() -> None:
    pytest.importorskip("lbforaging")
    env = make_env("Foraging-8x8-2p-2f-coop-v3", backend="gymnasium", num_envs=2, seed=0)
    rollout = env.rollout(20, break_when_any_done=False)
    mask = rollout["agent", "action_mask"]
    assert mask.shape == (2, 20, 2, 6) and mask.dtype == torch.bool
    # NONE is always valid; walls, other players and food (LOAD only beside it) rule moves out.
    assert mask[..., 0].all() and not mask.all()
    # The env's own list of valid moves, action by action, for the state it is in now.
    unwrapped = env.copies[0].joint_env.env.unwrapped
    valid = [{a.value for a in unwrapped._valid_actions[p]} for p in unwrapped.players]
    last = rollout["next", "agent", "action_mask"][0, -1]
    assert [set(torch.nonzero(row).flatten().tolist()) for row in last] == valid
    assert read_layout(env).group("agent").n_actions == 6


def test_rware_has_no_action_mask() -> None:
    pytest.importorskip("rware")
    env = make_env("rware-tiny-2ag-v2", backend="gymnasium", seed=0)
    assert ("agent", "action_mask") not in env.observation_spec.keys(True, True)


def test_options_are_the_registered_arguments() -> None:
    pytest.importorskip("lbforaging")
    scenario = get_scenario("Foraging-8x8-2p-2f-coop-v3", backend="gymnasium")
    options = scenario().options
    assert (options.agents, options.max_steps) == (2, 50)
    assert scenario(players=3, field_size=[6, 6]).options.agents == 3
    env = make_env("Foraging-8x8-2p-2f-coop-v3", backend="gymnasium", max_steps=4, seed=0)
    rollout = env.rollout(10)  # stops at the first done
    assert rollout.shape == (4,) and rollout["next", "truncated"][-1].all()
    with pytest.raises(ConfigError) as caught:
        make_env("Foraging-8x8-2p-2f-coop-v3", backend="gymnasium", fieldsize=[6, 6])
    assert "did you mean 'field_size'" in str(caught.value)
    with pytest.raises(ConfigError, match=r"^env\.players: expected an integer, got 'two'$"):
        make_env("Foraging-8x8-2p-2f-coop-v3", backend="gymnasium", players="two")
    with pytest.raises(ConfigError, match=r"^env\.name: unknown gymnasium scenario 'Foraging-8x8'"):
        make_env("Foraging-8x8", backend="gymnasium")
