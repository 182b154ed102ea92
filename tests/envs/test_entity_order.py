"""``env.entity_order: nearest``: each agent's landmarks and other agents listed nearest first, on
both backends; the same episodes, rewards and reference returns as world order."""

from __future__ import annotations

import pytest
import torch

from marlplug.envs import make_env
from marlplug.envs.entity_order import nearest_first
from marlplug.envs.evaluate import reference_episode_returns
from marlplug.errors import ConfigError

AGENTS = 4
LANDMARKS = slice(4, 4 + 2 * AGENTS)
OTHERS = slice(4 + 2 * AGENTS, 4 + 2 * AGENTS + 2 * (AGENTS - 1))


def rollout(backend: str, entity_order: str, *, num_envs: int = 3, global_state: bool = False):
    env = make_env(
        "cooperative_navigation",
        backend=backend,
        agents=AGENTS,
        num_envs=num_envs,
        seed=0,
        entity_order=entity_order,
        global_state=global_state,
    )
    torch.manual_seed(0)  # the random actions: the same in both orders
    try:
        return env.rollout(6)
    finally:
        env.close()


def lengths(observation: torch.Tensor, span: slice) -> torch.Tensor:
    return observation[..., span].unflatten(-1, (-1, 2)).norm(dim=-1)


@pytest.mark.parametrize("backend", ["mpe", "vmas"])
def test_nearest_first_sorts_each_list_and_changes_nothing_else(backend: str) -> None:
    world, nearest = rollout(backend, "world"), rollout(backend, "nearest")
    # Same episodes: observations do not move anything.
    assert torch.equal(world["next", "agent", "reward"], nearest["next", "agent", "reward"])
    for step in ("agent", "observation"), ("next", "agent", "observation"):
        seen, sorted_seen = world[step], nearest[step]
        assert torch.equal(seen[..., :4], sorted_seen[..., :4])  # own velocity and position
        assert torch.equal(seen[..., OTHERS.stop :], sorted_seen[..., OTHERS.stop :])
        for span in (LANDMARKS, OTHERS):
            length = lengths(sorted_seen, span)
            assert bool((length[..., 1:] >= length[..., :-1]).all()), f"{span} not nearest first"
            # The same entries, permuted.
            expected = nearest_first(seen, [(span.start, (span.stop - span.start) // 2)])
            assert torch.equal(sorted_seen[..., span], expected[..., span])
    assert not torch.equal(world["agent", "observation"], nearest["agent", "observation"])


def test_the_global_state_lists_the_landmarks_as_agent_0_sees_them_nearest_first() -> None:
    steps = rollout("vmas", "nearest", global_state=True)
    state, observation = steps["state"], steps["agent", "observation"]
    assert torch.equal(state[..., 4 * AGENTS :], observation[..., 0, LANDMARKS])


@pytest.mark.parametrize("backend", ["mpe", "vmas"])
def test_the_reference_returns_do_not_depend_on_the_order(backend: str) -> None:
    returns = {
        order: reference_episode_returns(
            make_env("cooperative_navigation", backend=backend, agents=AGENTS, entity_order=order),
            "cooperative_navigation",
            episodes=2,
            seed=0,
        )
        for order in ("world", "nearest")
    }
    assert returns["world"] == returns["nearest"]


def test_a_scenario_without_entity_lists_refuses_nearest_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"unknown field 'entity_order' in env 'predator_prey'"):
        make_env("predator_prey", agents=3, adversaries=1, entity_order="nearest")


@pytest.mark.parametrize("backend", ["mpe", "vmas"])
def test_physical_deception_sorts_landmarks_and_good_agents_keeping_target_and_adversary(
    backend: str,
) -> None:
    agents, landmarks = 5, 4  # 4 good agents; a good agent sees 1 adversary and 3 good agents

    def run(entity_order: str):
        env = make_env(
            "physical_deception", backend=backend, agents=agents, seed=0, entity_order=entity_order
        )
        torch.manual_seed(0)
        try:
            return env.rollout(5)
        finally:
            env.close()

    world, nearest = run("world"), run("nearest")
    for group in ("agent", "adversary"):
        key = ("next", group, "reward")
        assert torch.equal(world[key], nearest[key])
    good, good_sorted = world["agent", "observation"], nearest["agent", "observation"]
    adversary_slot = 2 + 2 * landmarks
    # The target and the adversary keep their slots in a good agent's view.
    assert torch.equal(good[..., :2], good_sorted[..., :2])
    assert torch.equal(
        good[..., adversary_slot : adversary_slot + 2],
        good_sorted[..., adversary_slot : adversary_slot + 2],
    )
    seen, seen_sorted = world["adversary", "observation"], nearest["adversary", "observation"]
    for before, after, span in (
        (good, good_sorted, slice(2, adversary_slot)),  # landmarks
        (good, good_sorted, slice(adversary_slot + 2, good.shape[-1])),  # the other good agents
        (seen, seen_sorted, slice(0, 2 * landmarks)),  # landmarks, as the adversary sees them
        (seen, seen_sorted, slice(2 * landmarks, seen.shape[-1])),  # every good agent
    ):
        length = lengths(after, span)
        assert bool((length[..., 1:] >= length[..., :-1]).all()), f"{span} not nearest first"
        # The same entries, reordered: the lengths are world order's, sorted.
        assert torch.equal(lengths(before, span).sort(dim=-1).values, length)
    # Nearest first moved something: the lists were not already sorted.
    assert not torch.equal(good, good_sorted)


def test_physical_deception_with_one_good_agent_has_nothing_to_sort() -> None:
    world = make_env("physical_deception", agents=2, seed=0).reset()
    nearest = make_env("physical_deception", agents=2, seed=0, entity_order="nearest").reset()
    assert torch.equal(world["agent", "observation"], nearest["agent", "observation"])
