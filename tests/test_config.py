"""Loading configs: formats, overrides, defaults and component options."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marlplug.config import apply_override, format_loc, load_config, resolved_dict
from marlplug.config.checks import ConfigWarning, format_bytes
from marlplug.errors import ConfigError
from marlplug.losses.ppo_options import JointTrainerConfig, PPOLossOptions
from marlplug.seeding import MAX_SEED, agent_seed, derive_seed
from marlplug.train.run import build_trainer
from tests.train.helpers import SMALL_RUN

YAML = """
seed: 7
env: {name: cooperative_navigation, backend: mpe}
algorithm: {name: ppo, clip_range: 0.1}
losses:
  - name: cka
    coef: 0.05
train: {updates: 3}
"""

TOML = """
seed = 7
[env]
name = "cooperative_navigation"
backend = "mpe"
[algorithm]
name = "ppo"
clip_range = 0.1
[[losses]]
name = "cka"
coef = 0.05
[train]
updates = 3
"""


def test_yaml_and_toml_give_the_same_config(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(YAML)
    (tmp_path / "a.toml").write_text(TOML)
    from_yaml = resolved_dict(load_config(tmp_path / "a.yaml"))
    from_toml = resolved_dict(load_config(tmp_path / "a.toml"))
    assert from_yaml == from_toml
    assert from_yaml["losses"] == [{"name": "cka", "coef": 0.05, "eps": 1e-8}]
    assert from_yaml["algorithm"]["clip_range"] == 0.1


def test_plugin_options_are_validated_objects(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(YAML)
    config = load_config(tmp_path / "a.yaml", ["losses[0].coef=0.5"])
    options = config.losses[0].options
    assert type(options).__name__ == "CKAOptions"
    assert options.coef == 0.5  # type: ignore[attr-defined]


def test_overrides_parse_values_as_yaml() -> None:
    data: dict[str, object] = {}
    apply_override(data, "train.updates=5")
    apply_override(data, "logging.progress=false")
    apply_override(data, "losses=[redundancy, {name: cka, coef: 0.2}]")
    assert data == {
        "train": {"updates": 5},
        "logging": {"progress": False},
        "losses": ["redundancy", {"name": "cka", "coef": 0.2}],
    }


def test_name_alone_is_shorthand_for_a_component() -> None:
    config = load_config(
        data={"losses": ["redundancy", "cka"], "coding": {"scheme": "mds", "learners": 5}}
    )
    assert [spec.name for spec in config.losses] == ["redundancy", "cka"]
    assert config.coding is not None and config.coding.scheme.name == "mds"


def test_empty_config_is_the_defaults() -> None:
    config = load_config(data={})
    assert config.env.registry_key == "mpe/cooperative_navigation"
    assert config.losses == []  # PPO's own loss terms are algorithm options


@pytest.mark.parametrize(
    ("loc", "text"),
    [(("losses", 1, "coef"), "losses[1].coef"), (("train",), "train"), ((), "")],
)
def test_format_loc(loc: tuple[str | int, ...], text: str) -> None:
    assert format_loc(loc) == text


def test_error_carries_only_first_problem_and_a_count() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(data={"train": {"updates": "x", "n_epochs": "y", "gamma": "z"}})
    lines = str(info.value).splitlines()
    # The first in the section's field order (the trainer's shared fields, then the run's).
    assert lines[0] == "train.gamma: expected a number, got 'z'"
    assert lines[1] == "(and 2 more problems)"


# --------------------------------------------------------------------------- seeds


@given(
    seed=st.integers(0, MAX_SEED),
    parts=st.lists(st.integers(0, 2**64), max_size=5),
)
@settings(max_examples=200, deadline=None)
def test_every_derived_seed_is_in_the_range_every_backend_accepts(
    seed: int, parts: list[int]
) -> None:
    derived = derive_seed(seed, *parts)
    assert 0 <= derived <= MAX_SEED
    assert derived == derive_seed(seed, *parts)


def test_agent_seeds_are_unchanged_by_the_shared_derivation() -> None:
    """Coded runs and their checkpoints keep their per-agent seeds."""
    expected = int(np.random.SeedSequence([5, 1, 3, 2]).generate_state(1)[0])
    assert agent_seed(5, 3, 2, salt=1) == expected


@pytest.mark.parametrize("seed", [-1, MAX_SEED + 1])
def test_trainer_config_refuses_a_seed_no_backend_accepts(seed: int) -> None:
    bound = "greater than or equal to 0" if seed < 0 else f"less than or equal to {MAX_SEED}"
    with pytest.raises(ConfigError, match=f"^seed: input should be {bound}, got {seed}$"):
        JointTrainerConfig(seed=seed)


@pytest.mark.parametrize("backend", ["mpe", "vmas"])
def test_ppo_runs_with_the_largest_seed_on_every_backend(backend: str) -> None:
    """PPO on VMAS used to fail with 'Seed must be between 0 and 2**32 - 1': the trainer's derived
    rollout seed reached VMAS's np.random.seed. Every seed the config accepts must work."""
    config = load_config(
        overrides=[
            *SMALL_RUN,
            f"env.backend={backend}",
            f"seed={MAX_SEED}",
            "train.rollout_steps=10",
            "train.minibatch_size=10",
        ]
    )
    trainer = build_trainer(config)
    rollout = trainer.collect_rollout()
    stats = trainer.update(rollout)
    assert rollout.numel() == 10
    assert stats is not None


# --------------------------------------------------------------------------- cross-section checks


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"coding": {"scheme": "mds", "learners": 5, "stragglers": {"count": 1}}},
            "coding.stragglers.count: does nothing without delay_s",
        ),
        (
            {
                "coding": {
                    "scheme": "mds",
                    "learners": 5,
                    "stragglers": {"model": "random", "probability": 0.5},
                }
            },
            "coding.stragglers.probability: does nothing without delay_s",
        ),
        (
            {
                "coding": {
                    "scheme": "mds",
                    "learners": 5,
                    "stragglers": {"probability": 0.5, "delay_s": 1},
                }
            },
            "coding.stragglers.probability: used only by model 'random'",
        ),
        (
            {"algorithm": {"name": "maddpg"}, "train": {"lr": 0.1, "rollout_steps": 100}},
            "train.lr: algorithm 'maddpg' does not use train.lr, train.rollout_steps",
        ),
        (
            {"env": {"max_steps": 40}, "train": {"rollout_steps": 30}},
            "train.rollout_steps: 30 is shorter than an episode (env.max_steps 40); every rollout "
            "starts from a reset, so training never sees steps 31-40",
        ),
    ],
)
def test_settings_that_do_nothing_are_warned(data: dict[str, Any], message: str) -> None:
    with pytest.warns(ConfigWarning) as record:
        load_config(data=data)
    assert any(str(warning.message).startswith(message) for warning in record), record.list


def test_a_useful_config_gives_no_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_config(data={"env": {"max_steps": 25}, "train": {"rollout_steps": 25}})
        load_config(
            data={
                "algorithm": {"name": "maddpg"},
                "train": {"updates": 3},
                "coding": {
                    "scheme": "mds",
                    "learners": 5,
                    "stragglers": {"count": 1, "delay_s": 0.1},
                },
            }
        )


def test_a_maddpg_config_shows_and_saves_only_what_maddpg_uses() -> None:
    """The resolved config (`config show`, a run's config.yaml) reloads without errors or warnings."""
    resolved = resolved_dict(load_config(data={"algorithm": {"name": "maddpg"}}))
    assert "losses" not in resolved
    assert set(resolved["train"]) == {
        "updates",
        "max_minutes",
        "num_envs",
        "checkpoint_every",
        "keep_checkpoint_every",
        "max_nonfinite_steps",
        "eval_every",
        "eval_episodes",
        "eval_envs",
        "final_eval_episodes",
        "eval_backend",
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolved_dict(load_config(data=resolved)) == resolved


def test_maddpg_accepts_the_old_default_loss_list_and_an_empty_one() -> None:
    # Run folders saved before the PPO terms became algorithm options hold this list.
    spelled_out = [{"name": "clip_ppo", **PPOLossOptions().model_dump(mode="json")}]
    for losses in (["clip_ppo"], [], spelled_out):
        load_config(data={"algorithm": {"name": "maddpg"}, "losses": losses})
    with pytest.raises(ConfigError, match="losses: algorithm 'maddpg' trains with its own"):
        load_config(
            data={"algorithm": {"name": "maddpg"}, "losses": [{"name": "clip_ppo", "vf_coef": 1}]}
        )


@pytest.mark.parametrize(
    ("count", "text"), [(512, "512 B"), (1536, "1.5 kB"), (24e12, "24.0 TB"), (3e18, "3000.0 PB")]
)
def test_format_bytes(count: float, text: str) -> None:
    assert format_bytes(count) == text
