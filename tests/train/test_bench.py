"""``marlplug bench train --json``: interleaved trials of both pipelines, medians and returns."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from typing import Any

import pytest


def test_bench_train_json(run_cli: Callable[..., Any]) -> None:
    result = run_cli(
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
    )
    assert result.exit_code == 0, result.err
    out = json.loads(result.out[result.out.index("{") :])
    assert out["trials"] == 2 and out["torch_threads"] == 1 and out["frames_per_trial"] == 50
    assert len(out["marlplug_trials_fps"]) == len(out["torchrl_trials_fps"]) == 2
    assert out["marlplug_fps"] == pytest.approx(
        statistics.median(out["marlplug_trials_fps"]), abs=0.11
    )
    assert out["ratio"] == pytest.approx(out["marlplug_fps"] / out["torchrl_fps"], rel=0.01)
    assert out["marlplug_final_return"] is not None and out["torchrl_final_return"] is not None
