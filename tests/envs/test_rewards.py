"""Scripted reward checks: every scenario's reward responds as the paper describes, on every backend."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from marlplug.envs import get_scenario, scripted_rewards
from tests.envs.helpers import BACKENDS


def _rewards(
    backend: str, scenario: str, options: dict[str, Any], **situation: Any
) -> dict[str, Any]:
    instance = get_scenario(scenario, backend=backend)(**options)
    return {
        group: values.tolist() for group, values in scripted_rewards(instance, **situation).items()
    }


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


SPREAD_LANDMARKS = [(-0.6, 0.0), (0.0, 0.6), (0.6, 0.0)]


def test_cooperative_navigation_covering_landmarks_scores_higher(backend: str) -> None:
    on = _rewards(
        backend,
        "cooperative_navigation",
        {"agents": 3},
        landmarks=SPREAD_LANDMARKS,
        agents={"agent_0": (-0.6, 0.0), "agent_1": (0.0, 0.6), "agent_2": (0.6, 0.0)},
    )["agent"]
    far = _rewards(
        backend,
        "cooperative_navigation",
        {"agents": 3},
        landmarks=SPREAD_LANDMARKS,
        agents={"agent_0": (-0.9, -0.9), "agent_1": (0.0, -0.9), "agent_2": (0.9, -0.9)},
    )["agent"]
    assert on == pytest.approx([0.0, 0.0, 0.0], abs=1e-6)
    assert all(a > b for a, b in zip(on, far, strict=True))
    # Shared global term: 0.5 * -(sum over landmarks of the closest agent's distance).
    expected = -0.5 * (
        math.dist((-0.6, 0), (-0.9, -0.9))
        + math.dist((0, 0.6), (0, -0.9))
        + math.dist((0.6, 0), (0.9, -0.9))
    )
    assert far == pytest.approx([expected] * 3, abs=1e-5)


def test_cooperative_navigation_collisions_cost_half_a_point(backend: str) -> None:
    rewards = _rewards(
        backend,
        "cooperative_navigation",
        {"agents": 3},
        landmarks=SPREAD_LANDMARKS,
        agents={"agent_0": (-0.6, 0.0), "agent_1": (-0.5, 0.0), "agent_2": (0.6, 0.0)},
    )["agent"]
    assert rewards[0] == pytest.approx(rewards[2] - 0.5, abs=1e-6)
    assert rewards[1] == pytest.approx(rewards[2] - 0.5, abs=1e-6)


PREDATOR_PREY = {"agents": 4, "adversaries": 1, "obstacles": 2}
OBSTACLES = [(-0.8, 0.8), (0.8, 0.8)]
PREDATORS_APART = {"agent_0": (-0.5, -0.5), "agent_1": (0.0, -0.5), "agent_2": (0.5, -0.5)}


def test_predator_prey_collision_rewards_predators_and_penalizes_prey(backend: str) -> None:
    apart = _rewards(
        backend,
        "predator_prey",
        PREDATOR_PREY,
        landmarks=OBSTACLES,
        agents={**PREDATORS_APART, "adversary_0": (0.0, 0.3)},
    )
    assert apart == {"agent": [0.0, 0.0, 0.0], "adversary": [0.0]}
    caught = _rewards(
        backend,
        "predator_prey",
        PREDATOR_PREY,
        landmarks=OBSTACLES,
        agents={**PREDATORS_APART, "adversary_0": (0.0, -0.42)},
    )
    assert caught == {"agent": [10.0, 10.0, 10.0], "adversary": [-10.0]}
    # Two predators on the prey: twice the reward and twice the penalty.
    surrounded = _rewards(
        backend,
        "predator_prey",
        PREDATOR_PREY,
        landmarks=OBSTACLES,
        agents={
            **PREDATORS_APART,
            "agent_1": (0.0, -0.1),
            "agent_2": (0.0, 0.1),
            "adversary_0": (0.0, 0.0),
        },
    )
    assert surrounded == {"agent": [20.0, 20.0, 20.0], "adversary": [-20.0]}


def test_predator_prey_prey_is_penalized_for_leaving_the_arena(backend: str) -> None:
    rewards = _rewards(
        backend,
        "predator_prey",
        PREDATOR_PREY,
        landmarks=OBSTACLES,
        agents={**PREDATORS_APART, "adversary_0": (0.95, 0.0)},
    )
    assert rewards["adversary"][0] == pytest.approx(-0.5, abs=1e-5)


TARGET_LANDMARKS = [(-0.5, 0.0), (0.5, 0.0)]


def test_physical_deception_adversary_on_target_lowers_good_reward(backend: str) -> None:
    good = {"agent_0": (-0.5, 0.4), "agent_1": (0.5, 0.4)}
    far = _rewards(
        backend,
        "physical_deception",
        {"agents": 3, "landmarks": 2},
        landmarks=TARGET_LANDMARKS,
        target=0,
        agents={**good, "adversary_0": (0.5, -0.8)},
    )
    on = _rewards(
        backend,
        "physical_deception",
        {"agents": 3, "landmarks": 2},
        landmarks=TARGET_LANDMARKS,
        target=0,
        agents={**good, "adversary_0": (-0.5, 0.0)},
    )
    assert all(a < b for a, b in zip(on["agent"], far["agent"], strict=True))
    assert on["adversary"][0] > far["adversary"][0]
    d_far = math.dist((0.5, -0.8), (-0.5, 0.0))
    assert far["agent"] == pytest.approx([-0.4 + d_far] * 2, abs=1e-5)
    assert far["adversary"] == pytest.approx([-d_far], abs=1e-5)
    assert on["adversary"] == pytest.approx([0.0], abs=1e-6)


KEEP_AWAY = {"agents": 4, "adversaries": 2, "landmarks": 2}


def test_keep_away_rewards_both_sides_by_distance_to_target(backend: str) -> None:
    good = {"agent_0": (-0.5, 0.3), "agent_1": (0.5, 0.5)}
    far = _rewards(
        backend,
        "keep_away",
        KEEP_AWAY,
        landmarks=TARGET_LANDMARKS,
        target=0,
        agents={**good, "adversary_0": (0.8, -0.8), "adversary_1": (0.6, -0.8)},
    )
    blocked = _rewards(
        backend,
        "keep_away",
        KEEP_AWAY,
        landmarks=TARGET_LANDMARKS,
        target=0,
        agents={**good, "adversary_0": (-0.5, 0.0), "adversary_1": (0.6, -0.8)},
    )
    reached = _rewards(
        backend,
        "keep_away",
        KEEP_AWAY,
        landmarks=TARGET_LANDMARKS,
        target=0,
        agents={
            **good,
            "agent_0": (-0.5, 0.0),
            "adversary_0": (0.8, -0.8),
            "adversary_1": (0.6, -0.8),
        },
    )
    # The adversary onto the target lowers the good agents' reward and raises its team's.
    assert all(a < b for a, b in zip(blocked["agent"], far["agent"], strict=True))
    assert all(a > b for a, b in zip(blocked["adversary"], far["adversary"], strict=True))
    # A good agent onto the target does the opposite.
    assert all(a > b for a, b in zip(reached["agent"], far["agent"], strict=True))
    assert all(a < b for a, b in zip(reached["adversary"], far["adversary"], strict=True))
    expected = math.dist((0.6, -0.8), (-0.5, 0.0)) - 0.3
    for situation in (far, blocked, reached):
        # Zero-sum and shared within each team.
        assert torch.tensor(situation["agent"]).unique().numel() == 1
        assert situation["adversary"] == pytest.approx([-situation["agent"][0]] * 2, abs=1e-6)
    assert far["agent"] == pytest.approx([expected] * 2, abs=1e-5)
