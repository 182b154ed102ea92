"""``marlplug bench scaling --json`` on a tiny budget: both sweeps, real runs, consistent ratios."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def test_bench_scaling_json_has_both_sweeps_and_consistent_ratios() -> None:
    # A real process: TorchRL logs INFO lines to stdout when it is imported, and --json must stay
    # parseable as a whole.
    environment = {k: v for k, v in os.environ.items() if k != "RL_LOGGING_LEVEL"}
    args = [
        *("bench", "scaling", "--json"),
        *("--num-envs", "4", "--num-envs", "8"),
        *("--agents", "2", "--agents", "3"),
        *("--base-agents", "2", "--base-envs", "4"),
        *("--updates", "2", "--rollout-steps", "5", "--minibatch", "20", "--sim-steps", "2"),
    ]
    result = subprocess.run(
        [sys.executable, "-m", "marlplug.cli.main", *args],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [(r["sweep"], r["num_envs"], r["agents"]) for r in rows] == [
        ("num_envs", 4, 2),
        ("num_envs", 8, 2),
        ("agents", 4, 2),
        ("agents", 4, 3),
    ]
    for row in rows:
        # Frames as the trainer counts them: env steps x copies, every update.
        assert row["frames"] == 2 * 5 * row["num_envs"] == 2 * row["frames_per_update"]
        assert row["fps"] > 0 and row["sim_steps_per_s"] > 0
        shares = [row["collect_share"], row["update_share"], row["other_share"]]
        assert all(0.0 <= share <= 1.0 for share in shares) and row["collect_share"] > 0
        assert sum(shares) == pytest.approx(1.0, abs=0.01)
        assert row["train_over_sim"] == pytest.approx(row["fps"] / row["sim_steps_per_s"], abs=1e-3)
    for sweep in ("num_envs", "agents"):
        first, *others = [r for r in rows if r["sweep"] == sweep]
        assert first["speedup"] == 1.0
        for row in others:
            assert row["speedup"] == pytest.approx(row["fps"] / first["fps"], abs=0.01)


def test_bench_scaling_table_names_every_column() -> None:
    from marlplug.bench.scaling import format_table

    row = {
        "sweep": "num_envs",
        "agents": 3,
        "num_envs": 1024,
        "fps": 12000.0,
        "collect_share": 0.25,
        "update_share": 0.6,
        "other_share": 0.15,
        "sim_steps_per_s": 200000.0,
        "train_over_sim": 0.06,
        "speedup": 1.0,
    }
    header, line = format_table([row]).splitlines()
    assert header.split() == [
        "sweep",
        "M",
        "num_envs",
        "frames/s",
        "collect",
        "update",
        "other",
        "sim",
        "steps/s",
        "train/sim",
        "speed-up",
    ]
    assert line.split() == [
        "num_envs",
        "3",
        "1024",
        "12,000",
        "25%",
        "60%",
        "15%",
        "200,000",
        "0.06",
        "1.00x",
    ]
