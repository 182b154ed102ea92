"""``env.entity_order: nearest``: each agent's landmarks and other agents listed nearest first, on
both backends; the same episodes, rewards and reference returns as world order."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from marlplug.envs import make_env
from marlplug.envs.entity_order import nearest_first
from marlplug.envs.evaluate import reference_episode_returns
from marlplug.envs.mpe.keep_away import KeepAwayOptions
from marlplug.envs.mpe.predator_prey import PredatorPreyOptions

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


#: Options classes of the adversarial scenarios (both backends take the same options).
OPTIONS = {"keep_away": KeepAwayOptions, "predator_prey": PredatorPreyOptions}
#: Adversarial scenarios whose observations start ``[velocity, position]``: (name, options).
ADVERSARIAL = [
    ("keep_away", {"agents": 6, "adversaries": 3, "landmarks": 3}),
    ("predator_prey", {"agents": 6, "adversaries": 2, "obstacles": 2}),
]


def world_and_nearest(name: str, options: dict[str, int], backend: str):
    steps = {}
    for order in ("world", "nearest"):
        env = make_env(name, backend=backend, num_envs=3, seed=0, entity_order=order, **options)
        torch.manual_seed(0)  # the random actions: the same in both orders
        try:
            steps[order] = env.rollout(6)
        finally:
            env.close()
    return steps["world"], steps["nearest"]


def expected_lists(
    name: str, observations: dict[str, torch.Tensor]
) -> dict[str, list[torch.Tensor]]:
    """Per group, per declared list, the positions it should hold in world order, relative to
    each agent: ``[..., agents, entries, 2]``, built from the agents' own positions (columns 2-3)."""
    own = {group: obs[..., 2:4] for group, obs in observations.items()}
    good, adversaries = own["agent"], own["adversary"]

    def others(team: torch.Tensor, agent: int) -> torch.Tensor:
        return torch.cat([team[..., :agent, :], team[..., agent + 1 :, :]], dim=-2)

    def relative(entities: Callable[[int], torch.Tensor], team: torch.Tensor) -> torch.Tensor:
        return torch.stack(
            [entities(agent) - team[..., agent : agent + 1, :] for agent in range(team.shape[-2])],
            dim=-3,
        )

    if name == "keep_away":
        return {
            "agent": [
                relative(lambda i: others(good, i), good),
                relative(lambda i: adversaries, good),
            ],
            "adversary": [
                relative(lambda i: good, adversaries),
                relative(lambda i: others(adversaries, i), adversaries),
            ],
        }
    return {  # predator_prey: the other predators; every predator, seen by the prey
        "agent": [relative(lambda i: others(good, i), good)],
        "adversary": [relative(lambda i: good, adversaries)],
    }


@pytest.mark.parametrize("backend", ["mpe", "vmas"])
@pytest.mark.parametrize(("name", "options"), ADVERSARIAL)
def test_adversarial_lists_hold_what_they_declare(
    name: str, options: dict[str, int], backend: str
) -> None:
    declared = OPTIONS[name](**options).entity_lists()
    world, nearest = world_and_nearest(name, options, backend)
    observations = {group: world[group, "observation"] for group in ("agent", "adversary")}
    expected = expected_lists(name, observations)
    for group, spans in declared.items():
        seen = observations[group]
        landmarks, *agents = spans
        # The first list is the landmarks (or obstacles): the same places seen from every agent.
        first, entries = landmarks
        places = seen[..., first : first + 2 * entries].unflatten(-1, (entries, 2))
        absolute = places + seen[..., 2:4].unsqueeze(-2)
        assert torch.allclose(absolute, absolute[..., :1, :, :].expand_as(absolute), atol=1e-5)
        for (first, entries), positions in zip(agents, expected[group], strict=True):
            span = seen[..., first : first + 2 * entries].unflatten(-1, (entries, 2))
            assert torch.allclose(span, positions, atol=1e-5), (group, first)
    # Nearest first: each list sorted, the rest and the rewards as in world order.
    for group, spans in declared.items():
        assert torch.equal(world["next", group, "reward"], nearest["next", group, "reward"])
        seen, sorted_seen = world[group, "observation"], nearest[group, "observation"]
        assert torch.equal(nearest_first(seen, spans), sorted_seen)
        for first, entries in spans:
            length = lengths(sorted_seen, slice(first, first + 2 * entries))
            assert bool((length[..., 1:] >= length[..., :-1]).all())
