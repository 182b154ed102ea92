"""Small sizes of every scenario, shared by the env tests."""

from __future__ import annotations

from typing import Any

from marlplug.envs import available_envs

#: scenario -> (options, expected {group: number of agents})
SMALL: dict[str, tuple[dict[str, Any], dict[str, int]]] = {
    "cooperative_navigation": ({"agents": 3}, {"agent": 3}),
    "predator_prey": (
        {"agents": 4, "adversaries": 1, "obstacles": 2},
        {"agent": 3, "adversary": 1},
    ),
    "physical_deception": ({"agents": 3, "landmarks": 3}, {"agent": 2, "adversary": 1}),
    "keep_away": ({"agents": 5, "adversaries": 2, "landmarks": 3}, {"agent": 3, "adversary": 2}),
}

#: Observation size per agent, per group, for the SMALL options.
OBSERVATION_SIZES: dict[str, dict[str, int]] = {
    # vel, pos, 3 landmarks, 2 others, 2 comms
    "cooperative_navigation": {"agent": 2 + 2 + 6 + 4 + 4},
    # vel, pos, 2 obstacles, 3 others, velocities of the prey among the others
    "predator_prey": {"agent": 2 + 2 + 4 + 6 + 2, "adversary": 2 + 2 + 4 + 6},
    # good: target, 3 landmarks, 2 others; adversary: 3 landmarks, 2 others
    "physical_deception": {"agent": 2 + 6 + 4, "adversary": 6 + 4},
    # good: vel, pos, target, 3 landmarks, 4 others; adversary: without the target
    "keep_away": {"agent": 2 + 2 + 2 + 6 + 8, "adversary": 2 + 2 + 6 + 8},
}

#: The installed backends that implement the paper's four scenarios (the ``pettingzoo`` backend
#: names PettingZoo's own tasks instead).
BACKENDS = [backend for backend in ("mpe", "vmas") if backend in available_envs()]
