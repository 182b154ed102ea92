"""What ``marlplug bench scaling`` recognizes as replay-based and sets there: every built-in replay
algorithm, a plugin's replay options without ``updates_per_iteration`` too, and exactly the
schedule fields :data:`REPLAY_FIELDS` names."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from marlplug.bench.scaling_config import (
    REPLAY_CONFIG,
    REPLAY_FIELDS,
    config_path,
    learns_from_replay,
    replay_overrides,
)
from marlplug.plugins import get_component
from marlplug.testing import register_plugin

EXAMPLE_ALGORITHM = (
    Path(__file__).resolve().parents[2] / "examples/plugins/marlplug-example-algorithm"
)
REPLAY_ALGORITHMS = ["maddpg", "iddpg", "masac", "isac", "iql", "vdn", "qmix"]


@pytest.mark.parametrize("algorithm", REPLAY_ALGORITHMS)
def test_every_built_in_replay_algorithm_is_replay_based(algorithm: str) -> None:
    options = get_component("algorithm", algorithm).Options
    assert "updates_per_iteration" in options.model_fields
    assert learns_from_replay(options)


def test_ppo_is_not_replay_based() -> None:
    assert not learns_from_replay(get_component("algorithm", "ppo").Options)


def test_replay_options_without_updates_per_iteration_are_replay_based(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE_ALGORITHM))
    plugin = importlib.import_module("marlplug_example_algorithm")
    with register_plugin(plugin, name="example-algorithm"):
        options = get_component("algorithm", "linear_iql").Options
        assert "updates_per_iteration" not in options.model_fields
        assert learns_from_replay(options)
        assert config_path("linear_iql").endswith(REPLAY_CONFIG)


def test_replay_overrides_set_exactly_the_replay_fields() -> None:
    overrides = replay_overrides(num_envs=4, updates=2, rollout_steps=None, minibatch=20)
    assert sorted(key.partition("=")[0] for key in overrides) == sorted(
        f"algorithm.{field}" for field in REPLAY_FIELDS
    )
