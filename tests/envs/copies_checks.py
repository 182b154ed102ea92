"""What every ``env.copies`` mode must give, for tests/envs/test_copies.py (worker processes) and
tests/envs/test_ray_copies.py (Ray actors): the serial copies' transitions, bit for bit, on each
non-vectorized backend, and the small training run both compare."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from marlplug.config.schema import EnvCopies
from marlplug.envs import make_env

#: (backend, scenario, options): the three non-vectorized backends, one task each.
NON_VECTORIZED: list[tuple[str, str, dict[str, Any]]] = [
    # nearest first: a transform over the batched env, as a run's config has it.
    ("mpe", "cooperative_navigation", {"agents": 3, "entity_order": "nearest"}),
    # two groups of one agent each
    ("pettingzoo", "simple_speaker_listener", {}),
    # action masks; episodes of 10 steps so the rollout crosses resets
    ("gymnasium", "Foraging-8x8-2p-2f-coop-v3", {"max_steps": 10}),
]


def _rollout(
    copies: EnvCopies, backend: str, scenario: str, options: dict[str, Any], num_envs: int
) -> Any:
    env = make_env(scenario, backend=backend, num_envs=num_envs, seed=5, copies=copies, **options)
    try:
        torch.manual_seed(0)  # the random actions
        return env.rollout(30, break_when_any_done=False), env.group_map
    finally:
        env.close()


def assert_serial_transitions(
    copies: EnvCopies, backend: str, scenario: str, options: dict[str, Any], *, num_envs: int
) -> None:
    """Check that ``num_envs`` copies run as ``copies`` say give the serial copies' rollout: the
    same groups, keys and values, across resets."""
    if backend == "gymnasium":
        pytest.importorskip("lbforaging")
    serial, serial_groups = _rollout("serial", backend, scenario, options, num_envs)
    other, other_groups = _rollout(copies, backend, scenario, options, num_envs)
    assert other_groups == serial_groups
    assert set(other.keys(True, True)) == set(serial.keys(True, True))
    assert bool(serial["next", "done"].any())  # the copies were reset along the way
    for key in serial.keys(True, True):
        assert torch.equal(other[key], serial[key]), key


def small_run(copies: str, folder: Path) -> dict[str, Any]:
    """A two-update run of cooperative navigation on two copies, as ``load_config`` data."""
    return {
        "env": {"name": "cooperative_navigation", "agents": 2, "copies": copies},
        "train": {
            "num_envs": 2,
            "rollout_steps": 25,
            "minibatch_size": 25,
            "n_epochs": 1,
            "updates": 2,
            "eval_every": 0,
        },
        "logging": {"dir": str(folder), "progress": False},
    }
