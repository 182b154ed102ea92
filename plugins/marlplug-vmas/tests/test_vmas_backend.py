"""The vmas backend against the mpe reference: same specs, same rewards, same trajectories."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torchrl.envs import EnvBase

from marlplug.envs import get_scenario, make_env

SMALL: dict[str, dict[str, Any]] = {
    "cooperative_navigation": {"agents": 3},
    "predator_prey": {"agents": 4, "adversaries": 2, "obstacles": 2},
    "physical_deception": {"agents": 4, "landmarks": 3},
    "keep_away": {"agents": 5, "adversaries": 2, "landmarks": 3},
}
#: Larger teams: the batched reward/observation code indexes "every other agent" per agent.
LARGE: dict[str, dict[str, Any]] = {
    "cooperative_navigation": {"agents": 8},
    "predator_prey": {"agents": 8, "adversaries": 3, "obstacles": 2},
    "physical_deception": {"agents": 7, "landmarks": 4},
    "keep_away": {"agents": 8, "adversaries": 3, "landmarks": 4},
}
KEYS = ["observation", "action", "reward", "done", "terminated", "truncated"]


def _spec(env: EnvBase, group: str, key: str) -> Any:
    if key == "observation":
        return env.observation_spec[group, key]
    if key == "action":
        return env.full_action_spec[group, key]
    if key == "reward":
        return env.full_reward_spec[group, key]
    return env.full_done_spec[group, key]


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize("scenario", sorted(SMALL))
def test_specs_match_the_mpe_backend(scenario: str, continuous: bool) -> None:
    mpe = make_env(scenario, num_envs=2, continuous_actions=continuous, **SMALL[scenario])
    vmas = make_env(
        scenario, backend="vmas", num_envs=2, continuous_actions=continuous, **SMALL[scenario]
    )
    assert vmas.group_map == mpe.group_map
    assert vmas.batch_size == mpe.batch_size
    for group in mpe.group_map:
        for key in KEYS:
            expected, actual = _spec(mpe, group, key), _spec(vmas, group, key)
            assert (actual.shape, actual.dtype) == (expected.shape, expected.dtype), (group, key)
        if continuous:
            action = _spec(vmas, group, "action")
            assert torch.all(action.space.low == 0) and torch.all(action.space.high == 1)
        else:
            assert _spec(vmas, group, "action").space.n == 5
    for key in ("done", "terminated", "truncated"):
        assert mpe.full_done_spec[key].shape == vmas.full_done_spec[key].shape


def _start(
    backend: str, scenario: str, continuous: bool, options: dict[str, Any]
) -> tuple[Any, EnvBase, Any]:
    """Both backends from the same hand-placed state (positions on a fixed grid)."""
    instance = get_scenario(scenario, backend=backend)(continuous_actions=continuous, **options)
    env = instance.make(num_envs=1, seed=0)
    tensordict = env.reset()
    names = [name for names in env.group_map.values() for name in names]
    agents = {name: (-0.7 + 0.33 * i, 0.25 * (-1) ** i) for i, name in enumerate(sorted(names))}
    landmarks = [(-0.6 + 0.45 * (i % 4), -0.6 - 0.3 * (i // 4)) for i in range(8)]
    target = 1 if scenario in {"physical_deception", "keep_away"} else None
    instance.place(env, agents=agents, landmarks=landmarks, target=target)
    return instance, env, tensordict


@pytest.mark.parametrize(
    ("continuous", "sizes"),
    [(False, SMALL), (True, SMALL), (False, LARGE)],
    ids=["discrete", "continuous", "discrete-large"],
)
@pytest.mark.parametrize("scenario", sorted(SMALL))
def test_same_actions_give_the_same_trajectory(
    scenario: str, continuous: bool, sizes: dict[str, dict[str, Any]]
) -> None:
    _assert_same_trajectory(scenario, continuous, sizes[scenario])


@pytest.mark.parametrize("continuous", [False, True])
def test_observed_velocities_are_the_same_on_both_backends(continuous: bool) -> None:
    options = {**SMALL["physical_deception"], "observe_velocity": True}
    _assert_same_trajectory("physical_deception", continuous, options)


def _assert_same_trajectory(scenario: str, continuous: bool, options: dict[str, Any]) -> None:
    """Six steps of the same random actions from the same hand-placed state: the same
    observations and rewards on both backends."""
    _, mpe, mpe_td = _start("mpe", scenario, continuous, options)
    _, vmas, vmas_td = _start("vmas", scenario, continuous, options)
    generator = torch.Generator().manual_seed(0)
    for _ in range(6):
        for group in mpe.group_map:
            count = len(mpe.group_map[group])
            if continuous:
                action = torch.rand(count, 5, generator=generator)
            else:
                action = torch.randint(5, (count,), generator=generator)
            mpe_td[group, "action"] = action
            vmas_td[group, "action"] = action.unsqueeze(0)
        mpe_out, vmas_out = mpe.step(mpe_td), vmas.step(vmas_td)
        for group in mpe.group_map:
            for key in ("observation", "reward"):
                torch.testing.assert_close(
                    vmas_out["next", group, key][0],
                    mpe_out["next", group, key],
                    atol=1e-4,
                    rtol=1e-4,
                    msg=f"{group}/{key} differs between backends",
                )
        mpe_td, vmas_td = mpe_out["next"].clone(), vmas_out["next"].clone()


def test_same_seed_gives_bit_identical_batches() -> None:
    def episode(seed: int) -> torch.Tensor:
        env = make_env("keep_away", backend="vmas", num_envs=8, seed=seed, agents=4, adversaries=2)
        torch.manual_seed(5)
        rollout = env.rollout(10)
        return torch.cat(
            [
                rollout["next", "agent", "observation"].flatten(),
                rollout["next", "adversary", "reward"].flatten(),
            ]
        )

    assert torch.equal(episode(1), episode(1))
    assert not torch.equal(episode(1), episode(2))


@pytest.mark.parametrize("max_steps", [3, 25])
def test_truncation_after_max_steps(max_steps: int) -> None:
    env = make_env("predator_prey", backend="vmas", num_envs=4, max_steps=max_steps, seed=0)
    rollout = env.rollout(100)
    assert rollout.batch_size == (4, max_steps)
    assert bool(rollout["next", "truncated"][:, -1].all())
    assert bool(rollout["next", "agent", "done"][:, -1].all())
    assert not bool(rollout["next", "done"][:, :-1].any())


def test_bad_options_are_config_errors_on_vmas_too() -> None:
    from marlplug import ConfigError

    with pytest.raises(ConfigError, match=r"^env\.adversaries: must be fewer than agents \(3\)"):
        make_env("keep_away", backend="vmas", agents=3, adversaries=3)
