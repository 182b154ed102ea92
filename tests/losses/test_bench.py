"""``marlplug bench loss --json``: the documented keys, and ratios consistent with the timings."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import torch

from marlplug.bench.loss import gram_floor
from marlplug.losses.redundancy import redundancy_pair_loop, standardize_columns


def test_bench_loss_json_rows(run_cli: Callable[..., Any]) -> None:
    result = run_cli(
        "bench",
        "loss",
        "--json",
        "--agents",
        "2",
        "--agents",
        "3",
        "--rows",
        "40",
        "--hidden",
        "8",
        "--repeats",
        "1",
    )
    assert result.exit_code == 0, result.err
    rows = json.loads(result.out)
    assert [row["agents"] for row in rows] == [2, 3]
    for row in rows:
        assert {
            "agents",
            "joint_ms",
            "separate_ms",
            "speedup",
            "redundancy_ms",
            "redundancy_pairloop_ms",
            "redundancy_floor_ms",
            "redundancy_ratio",
        } <= set(row)
        assert row["speedup"] == pytest.approx(
            row["separate_ms"] / row["joint_ms"], rel=0.01, abs=0.002
        )
        assert row["redundancy_ratio"] == pytest.approx(
            row["redundancy_ms"] / row["joint_ms"], rel=0.01, abs=0.002
        )


def test_gram_floor_holds_every_pair_of_the_penalty() -> None:
    # The floor's Gram contains all pairs: Σ_{i<j} ‖X_iᵀX_j‖² = (‖YᵀY‖² − Σ_i ‖X_iᵀX_i‖²) / 2.
    torch.manual_seed(0)
    features = [torch.randn(30, 4, dtype=torch.float64) for _ in range(3)]
    standardized = standardize_columns(torch.cat(features, 1), 1e-5)
    own = sum(float((x.T @ x).square().sum()) for x in standardized.split(4, dim=1))
    pairs = (float(gram_floor(standardized)) - own) / 2 / (30 * 30 * 16)
    assert pairs == pytest.approx(float(redundancy_pair_loop(features)), rel=1e-9)
    wide = standardized.repeat(1, 20)  # more columns than rows: the other orientation, same norm
    assert float(gram_floor(wide)) == pytest.approx(float((wide.T @ wide).square().sum()), rel=1e-9)
