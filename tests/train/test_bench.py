"""``marlplug bench train --json``: interleaved trials of both pipelines, medians and returns."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

import pytest


def test_bench_train_json() -> None:
    # A real process: TorchRL logs INFO lines to stdout when it is imported, and --json must stay
    # parseable as a whole.
    environment = {k: v for k, v in os.environ.items() if k != "RL_LOGGING_LEVEL"}
    args = [
        "bench",
        "train",
        "--json",
        "--agents",
        "2",
        "--updates",
        "1",
        "--frames-per-batch",
        "50",
        "--minibatch",
        "25",
        "--epochs",
        "1",
        "--trials",
        "2",
    ]
    result = subprocess.run(
        [sys.executable, "-m", "marlplug.cli.main", *args],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    # stderr is a pipe here, no terminal: no progress bar, not even rich's last frame.
    assert "bench train" not in result.stderr and "\x1b[" not in result.stderr
    assert out["trials"] == 2 and out["torch_threads"] == 1 and out["frames_per_trial"] == 50
    assert len(out["marlplug_trials_fps"]) == len(out["torchrl_trials_fps"]) == 2
    assert out["marlplug_fps"] == pytest.approx(
        statistics.median(out["marlplug_trials_fps"]), abs=0.11
    )
    assert out["ratio"] == pytest.approx(out["marlplug_fps"] / out["torchrl_fps"], rel=0.01)
    assert out["marlplug_final_return"] is not None and out["torchrl_final_return"] is not None
