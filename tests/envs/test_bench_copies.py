"""``marlplug bench envs --copies ...``: one process against worker processes for the env copies,
side by side in one run, at tiny sizes (the numbers themselves mean nothing here)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from marlplug.envs import available_envs
from marlplug.runs.machine import cpu_model


def test_serial_and_processes_side_by_side_with_the_ratio(run_cli: Callable[..., Any]) -> None:
    result = run_cli(
        *("bench", "envs", "--json", "--copies", "processes", "--copies", "serial"),
        *("--env", "mpe/keep_away", "--agents", "3", "--num-envs", "2"),
        *("--steps", "2", "--trials", "3"),
    )
    assert result.exit_code == 0, result.err
    rows = json.loads(result.out)
    assert [(row["env"], row["copies"]) for row in rows] == [
        ("mpe/keep_away", "serial"),  # serial first, whatever the order given
        ("mpe/keep_away", "processes"),
    ]
    serial, processes = rows
    for row in rows:
        assert row["agents"] == 3 and row["num_envs"] == 2 and row["trials"] == 3
        assert len(row["trial_steps_per_s"]) == 3 and row["steps_per_s"] > 0
        assert row["cpu"] == cpu_model() and row["threads"] == 1 and row["start_s"] > 0
    assert (
        serial["ratio"]
        == processes["ratio"]
        == pytest.approx(processes["steps_per_s"] / serial["steps_per_s"], abs=0.01)
    )


def test_the_table_starts_with_the_cpu(run_cli: Callable[..., Any]) -> None:
    result = run_cli("bench", "envs", "--copies", "serial", "--quick", "--env", "mpe/keep_away")
    assert result.exit_code == 0, result.err
    cpu, header, line = result.out.strip().splitlines()
    assert cpu.startswith(f"CPU: {cpu_model()}") and "vs serial" in header
    assert line.split()[:4] == ["mpe/keep_away", "3", "serial", "2"]


def test_mistakes_are_one_line(run_cli: Callable[..., Any]) -> None:
    no_slash = run_cli("bench", "envs", "--copies", "serial", "--env", "keep_away")
    assert no_slash.exit_code == 2 and "expected BACKEND/NAME" in no_slash.err
    without_copies = run_cli("bench", "envs", "--env", "mpe/keep_away")
    assert without_copies.exit_code == 2 and "add --copies" in without_copies.err
    if "vmas" in available_envs():
        vectorized = run_cli(
            *("bench", "envs", "--copies", "processes", "--env", "vmas/cooperative_navigation"),
            "--quick",
        )
        assert vectorized.exit_code == 2 and "Traceback" not in vectorized.err, vectorized.err
        assert vectorized.err.strip().splitlines()[-1].startswith("error: env.copies: ")
