"""The compact global state (``make_env(..., global_state=True)``): each entity once, on both
backends, on reset and on every step, matching its spec."""

from __future__ import annotations

import pytest
import torch
from torchrl.envs.utils import check_env_specs

from marlplug.envs import make_env
from marlplug.envs.state import STATE, GlobalState
from marlplug.errors import ConfigError


@pytest.mark.parametrize(("backend", "num_envs"), [("mpe", 1), ("mpe", 3), ("vmas", 4)])
def test_cooperative_navigation_state_holds_every_entity_once(backend: str, num_envs: int) -> None:
    agents = 4
    env = make_env(
        "cooperative_navigation",
        backend=backend,
        agents=agents,
        num_envs=num_envs,
        seed=0,
        global_state=True,
    )
    try:
        check_env_specs(env, seed=0)
        rollout = env.rollout(5)
        for step in (rollout, rollout["next"]):
            observation, state = step["agent", "observation"], step[STATE]
            assert state.shape[-1] == 6 * agents
            # Every agent's own velocity and position, in agent order...
            own = observation[..., :4].flatten(-2)
            assert torch.equal(state[..., : 4 * agents], own)
            # ...then the landmarks as agent 0 sees them.
            assert torch.equal(state[..., 4 * agents :], observation[..., 0, 4 : 4 + 2 * agents])
        # Absolute landmark positions agree whichever agent they are read through.
        positions = rollout["agent", "observation"][..., 2:4]
        landmarks = rollout["agent", "observation"][..., 4 : 4 + 2 * agents]
        absolute = landmarks + positions.repeat(*([1] * (positions.dim() - 1)), agents)
        assert torch.allclose(absolute[..., 0, :], absolute[..., -1, :], atol=1e-5)
    finally:
        env.close()


def test_state_matches_on_both_backends_for_the_same_scenario() -> None:
    widths = {
        backend: make_env(
            "cooperative_navigation", backend=backend, agents=3, seed=0, global_state=True
        )
        .observation_spec[STATE]
        .shape[-1]
        for backend in ("mpe", "vmas")
    }
    assert widths == {"mpe": 18, "vmas": 18}


def test_a_scenario_without_a_state_is_refused_with_its_name() -> None:
    with pytest.raises(ConfigError, match=r"mpe/predator_prey.*declares no global state"):
        make_env("predator_prey", agents=3, adversaries=1, seed=0, global_state=True)


def test_without_global_state_the_env_is_unchanged() -> None:
    env = make_env("cooperative_navigation", agents=2, seed=0)
    assert STATE not in env.observation_spec.keys(include_nested=True)


def test_an_empty_state_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        GlobalState({"agent": []})
