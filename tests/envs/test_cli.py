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
    assert keep_away == {"agents": 2, "continuous_actions": False, "max_steps": 25,
                         "adversaries": 1, "landmarks": 2}
    table = run_cli("envs")
    assert "predator_prey" in table.out and "max_steps = 25" in table.out


def test_render_writes_one_episode_gif(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("env:\n  name: predator_prey\n  agents: 5\n  adversaries: 2\n  max_steps: 6\n")
    out = tmp_path / "episode.gif"
    result = run_cli("render", str(config), "--out", str(out))
    assert result.exit_code == 0, result.err
    assert "7 frames" in result.out  # the reset state and one frame per step
    frames = imageio.mimread(out)  # (the GIF writer merges identical consecutive frames)
    assert 1 < len(frames) <= 7
    assert frames[0].shape[:2] == (700, 700)


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
    result = run_cli("bench", "envs", "--json", "--agents", "2", "--scenario", "keep_away",
                     "--steps", "2", "--repeats", "1", "--vmas-envs", "4")
    assert result.exit_code == 0, result.err
    rows = json.loads(result.out)
    assert [row["backend"] for row in rows] == [b for b in ("mpe", "vmas") if b in available_envs()]
    for row in rows:
        assert {"backend", "scenario", "agents", "num_envs", "steps_per_s"} <= set(row)
        assert row["scenario"] == "keep_away" and row["agents"] == 2 and row["steps_per_s"] > 0
    assert rows[0]["num_envs"] == 1
