"""``marlplug envs``, ``marlplug render`` and ``marlplug bench envs`` as a user runs them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import imageio.v2 as imageio

from marlplug.envs import available_envs


def test_envs_lists_every_scenario_with_defaults(run_cli: Callable[..., Any]) -> None:
    result = run_cli("envs", "--json")
    assert result.exit_code == 0, result.err
    entries = {entry["registry_key"]: entry for entry in json.loads(result.out)}
    for backend, scenarios in available_envs().items():
        for scenario in scenarios:
            assert f"{backend}/{scenario}" in entries
    keep_away = {p["name"]: p["default"] for p in entries["mpe/keep_away"]["parameters"]}
    assert keep_away == {
        "agents": 2,
        "continuous_actions": False,
        "max_steps": 25,
        "entity_order": "world",
        "adversaries": 1,
        "landmarks": 2,
    }
    table = run_cli("envs")
    assert "predator_prey" in table.out and "max_steps = 25" in table.out


def test_render_writes_one_episode_gif(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(
        "env:\n  name: predator_prey\n  agents: 5\n  adversaries: 2\n  max_steps: 6\n"
    )
    out = tmp_path / "episode.gif"
    result = run_cli("render", str(config), "--out", str(out))
    assert result.exit_code == 0, result.err
    assert "7 frames" in result.out  # the reset state and one frame per step
    frames = imageio.mimread(out)  # (the GIF writer merges identical consecutive frames)
    assert 1 < len(frames) <= 7
    assert frames[0].shape[:2] == (500, 500)


def test_render_bad_config_and_checkpoint(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("env:\n  name: keep_away\n  agents: 3\n  adversaries: 3\n")
    result = run_cli("render", str(config), "--out", str(tmp_path / "x.gif"))
    assert result.exit_code == 2
    assert result.err.startswith("error: env.adversaries: must be fewer than agents (3)")
    config.write_text("env:\n  name: keep_away\n")
    result = run_cli("render", str(config), "--checkpoint", str(tmp_path / "c.pt"))
    assert result.exit_code == 2 and "--checkpoint" in result.err


def test_bench_envs_json_rows(run_cli: Callable[..., Any]) -> None:
    result = run_cli(
        "bench",
        "envs",
        "--json",
        "--agents",
        "2",
        "--scenario",
        "keep_away",
        "--steps",
        "2",
        "--trials",
        "3",
        "--vmas-envs",
        "4",
    )
    assert result.exit_code == 0, result.err
    rows = json.loads(result.out)
    backends = [b for b in ("mpe", "vmas") if b in available_envs()]
    assert [row["backend"] for row in rows] == backends
    for row in rows:
        assert {
            "backend",
            "scenario",
            "agents",
            "num_envs",
            "steps_per_s",
            "trials",
            "trial_steps_per_s",
            "ratio",
            "threads",
        } <= set(row)
        assert row["scenario"] == "keep_away" and row["agents"] == 2 and row["steps_per_s"] > 0
        assert row["trials"] == len(row["trial_steps_per_s"]) == 3
        assert row["steps_per_s"] == sorted(row["trial_steps_per_s"])[1]  # the median
    assert rows[0]["num_envs"] == 1
    if backends == ["mpe", "vmas"]:
        assert rows[1]["num_envs"] == 4
        expected = round(rows[1]["steps_per_s"] / rows[0]["steps_per_s"], 1)
        assert abs(rows[0]["ratio"] - expected) <= 0.1 + 0.01 * expected
        assert rows[0]["ratio"] == rows[1]["ratio"]


def test_bench_envs_quick_table_shows_the_ratio(run_cli: Callable[..., Any]) -> None:
    result = run_cli("bench", "envs", "--quick", "--scenario", "cooperative_navigation")
    assert result.exit_code == 0, result.err
    header, *lines = result.out.strip().splitlines()
    assert "vmas/mpe" in header and "trials" in header
    assert [line.split()[:3] for line in lines] == [
        ["cooperative_navigation", "3", backend]
        for backend in ("mpe", "vmas")
        if backend in available_envs()
    ]
    if "vmas" in available_envs():
        assert lines[-1].rstrip().endswith("x")


def test_render_acts_with_a_trained_checkpoint(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(
        "env:\n  name: cooperative_navigation\n  agents: 2\n  max_steps: 5\n"
        "algorithm:\n  hidden_size: 16\n  feature_dim: 8\n"
        f"train:\n  updates: 1\n  rollout_steps: 20\n  minibatch_size: 10\n  n_epochs: 1\n"
        f"logging:\n  dir: {tmp_path}\n  run_name: run\n  progress: false\n"
    )
    trained = run_cli("train", str(config))
    assert trained.exit_code == 0, trained.err
    checkpoint = tmp_path / "run" / "checkpoint.pt"
    out = tmp_path / "greedy.gif"
    result = run_cli("render", str(config), "--checkpoint", str(checkpoint), "--out", str(out))
    assert result.exit_code == 0, result.err
    assert "6 frames, greedy actions of" in result.out
    assert imageio.mimread(out)[0].shape[:2] == (500, 500)
    # A checkpoint trained for 2 agents does not fit a 3-agent env: one-line error, exit 2.
    result = run_cli(
        "render",
        str(config),
        "--set",
        "env.agents=3",
        "--checkpoint",
        str(checkpoint),
        "--out",
        str(tmp_path / "x.gif"),
    )
    assert result.exit_code == 2 and result.err.startswith("error: --checkpoint")
