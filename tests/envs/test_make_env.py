"""make_env on the mpe backend: groups and keys, batching, actions, seeding, episode length."""

from __future__ import annotations

import pytest
import torch
from torchrl.envs import EnvBase

from marlplug.envs import get_scenario, make_env
from tests.envs.helpers import OBSERVATION_SIZES, SMALL

SCENARIOS = sorted(SMALL)
GROUP_KEYS = ["observation", "action", "reward", "done", "terminated", "truncated"]


def _keys(env: EnvBase) -> set[tuple[str, ...]]:
    td = env.fake_tensordict()
    keys = set(td.keys(include_nested=True, leaves_only=True))
    keys |= {("next", *k) if isinstance(k, tuple) else ("next", k) for k in []}
    return {k if isinstance(k, tuple) else (k,) for k in keys}


def test_built_ins_are_registered() -> None:
    for scenario in SCENARIOS:
        assert get_scenario(scenario, backend="mpe").scenario == scenario


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_groups_keys_and_shapes(scenario: str) -> None:
    options, sizes = SMALL[scenario]
    env = make_env(scenario, seed=0, **options)
    assert {group: len(names) for group, names in env.group_map.items()} == sizes
    keys = _keys(env)
    for group, count in sizes.items():
        for key in GROUP_KEYS:
            location = (group, key) if key in {"observation", "action"} else ("next", group, key)
            assert location in keys, location
        assert env.observation_spec[group, "observation"].shape == (
            count,
            OBSERVATION_SIZES[scenario][group],
        )
        action = env.full_action_spec[group, "action"]
        assert action.shape == (count,) and action.space.n == 5
        assert env.full_reward_spec[group, "reward"].shape == (count, 1)
    rollout = env.rollout(5)
    assert rollout.batch_size == (5,)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_continuous_actions_and_parallel_copies(scenario: str) -> None:
    options, sizes = SMALL[scenario]
    env = make_env(scenario, num_envs=3, seed=0, continuous_actions=True, **options)
    assert env.batch_size == (3,)
    for group, count in sizes.items():
        action = env.full_action_spec[group, "action"]
        assert action.shape == (3, count, 5)
        assert torch.all(action.space.low == 0) and torch.all(action.space.high == 1)
    rollout = env.rollout(4)
    assert rollout["next", "agent", "reward"].shape == (3, 4, sizes["agent"], 1)
    # Copies are seeded differently, so they start in different states.
    first = rollout["agent", "observation"][:, 0]
    assert not torch.equal(first[0], first[1])


def _episode(scenario: str, seed: int, num_envs: int = 1) -> torch.Tensor:
    options, _ = SMALL[scenario]
    env = make_env(scenario, seed=seed, num_envs=num_envs, **options)
    torch.manual_seed(123)  # the random actions
    rollout = env.rollout(10)
    return torch.cat(
        [
            rollout["next", group, key].flatten().float()
            for group in sorted(env.group_map)
            for key in ("observation", "reward")
        ]
    )


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_same_seed_gives_bit_identical_episodes(scenario: str) -> None:
    assert torch.equal(_episode(scenario, seed=7), _episode(scenario, seed=7))
    assert not torch.equal(_episode(scenario, seed=7), _episode(scenario, seed=8))


def test_same_seed_bit_identical_with_copies() -> None:
    assert torch.equal(
        _episode("keep_away", seed=3, num_envs=2), _episode("keep_away", seed=3, num_envs=2)
    )


@pytest.mark.parametrize("max_steps", [1, 7, 25])
def test_episode_is_truncated_after_max_steps(max_steps: int) -> None:
    env = make_env("keep_away", max_steps=max_steps, seed=0)
    rollout = env.rollout(100)
    assert rollout.batch_size == (max_steps,)
    assert bool(rollout["next", "truncated"][-1].all())
    assert not bool(rollout["next", "terminated"].any())
    assert not bool(rollout["next", "done"][:-1].any())
    assert bool(rollout["next", "agent", "truncated"][-1].all())


def test_default_max_steps_is_25() -> None:
    assert make_env("cooperative_navigation", seed=0).rollout(100).batch_size == (25,)


def test_paper_sizes() -> None:
    env = make_env("keep_away", agents=8, adversaries=4, seed=0)
    assert (len(env.group_map["agent"]), len(env.group_map["adversary"])) == (4, 4)
    env = make_env("predator_prey", agents=8, adversaries=4, seed=0)
    assert (len(env.group_map["agent"]), len(env.group_map["adversary"])) == (4, 4)
    env = make_env("physical_deception", agents=8, seed=0)
    assert len(env.group_map["agent"]) == 7 and len(env.group_map["adversary"]) == 1
