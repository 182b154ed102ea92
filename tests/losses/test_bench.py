"""``marlplug bench loss --json``: the documented keys, ratios consistent with the timings, and the
joint step's GEMM FLOPs against a hand count."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import torch

from marlplug.bench.gemm_floor import gemm_flops
from marlplug.bench.gemm_replay import (
    TensorLayout,
    record_products,
    replayed_medians_ms,
)
from marlplug.bench.loss import gram_floor, measure
from marlplug.bench.loss_sides import (
    N_ACTIONS,
    OBSERVATION_DIM,
    joint_update,
    model_and_batch,
    state_dim,
)
from marlplug.losses.redundancy import (
    mean_abs_correlation,
    redundancy_pair_loop,
    standardize_columns,
)
from marlplug.nn.critic_input import CriticInput

CRITICS: tuple[CriticInput, ...] = ("joint", "state", "local")


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
        _assert_gemm_floor(row)
        assert row["critic"] == "joint"
    assert rows[0]["gemm_gflop"] < rows[1]["gemm_gflop"]


def _rounding_slack(*values_ms: float) -> float:
    """How far a difference of printed times may sit from the printed difference: times are
    rounded to 3 decimals or 4 significant digits (``significant``), so on a busy machine, where a
    step takes over 100 ms, the last digit kept is 0.1 ms, not 0.001."""
    return 2e-3 + 1e-3 * max(abs(value) for value in values_ms)


def _assert_gemm_floor(row: dict[str, Any]) -> None:
    assert row["gemm_gflop"] > 0 and row["gemm_gflops_rate"] > 0 and row["step_over_floor"] > 0
    assert row["gemm_floor_ms"] == pytest.approx(
        row["gemm_gflop"] / row["gemm_gflops_rate"] * 1e3, rel=2e-3
    )
    assert row["step_over_floor"] == pytest.approx(row["joint_ms"] / row["gemm_floor_ms"], rel=2e-3)
    assert row["gemm_in_step_ms"] > 0 and row["gemm_alone_ms"] > 0
    assert row["gemm_alone_over_floor"] > 0 and row["replay_gflops_rate"] > 0
    assert row["rest_ms"] == pytest.approx(
        row["joint_ms"] - row["gemm_in_step_ms"],
        abs=_rounding_slack(row["joint_ms"], row["gemm_in_step_ms"]),
    )
    products = row["products"]
    assert sum(p["alone_ms"] for p in products) == pytest.approx(row["gemm_alone_ms"], rel=1e-3)
    assert {p["product"].split()[0] for p in products} >= {"bmm", "baddbmm"}


def test_bench_loss_state_critic_json(run_cli: Callable[..., Any]) -> None:
    result = run_cli(
        "bench",
        "loss",
        "--json",
        "--critic",
        "state",
        "--agents",
        "2",
        "--rows",
        "16",
        "--hidden",
        "8",
        "--repeats",
        "1",
    )
    assert result.exit_code == 0, result.err
    (row,) = json.loads(result.out)
    assert row["critic"] == "state" and row["agents"] == 2
    assert row["activation"] == "tanh"
    _assert_gemm_floor(row)


def test_bench_loss_relu_runs_relu_on_both_sides(run_cli: Callable[..., Any]) -> None:
    result = run_cli(
        "bench", "loss", "--json", "--activation", "relu", "--agents", "2", "--rows", "16",
        "--hidden", "8", "--repeats", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.err
    (row,) = json.loads(result.out)
    assert row["activation"] == "relu"
    _assert_gemm_floor(row)
    model, _ = model_and_batch(2, rows=4, hidden=8, critic="joint", activation="relu")
    kinds = {type(m) for m in model.modules() if isinstance(m, (torch.nn.Tanh, torch.nn.ReLU))}
    assert kinds == {torch.nn.ReLU}


@pytest.mark.parametrize("critic", CRITICS)
def test_measure_runs_every_critic(critic: CriticInput) -> None:
    row = measure(2, rows=16, hidden=8, repeats=1, critic=critic)
    assert row["joint_ms"] > 0 and row["separate_ms"] > 0
    _assert_gemm_floor(row)


def _hand_count(critic: CriticInput, agents: int, rows: int, hidden: int) -> int:
    """FLOPs (2 per multiply-add) of the matrix products of one joint step's networks."""
    observation, actions = OBSERVATION_DIM, N_ACTIONS
    # Actor: encoder observation -> hidden -> hidden (features), head hidden -> actions, per agent.
    actor_forward = rows * agents * (observation * hidden + hidden * hidden + hidden * actions)
    # Backward: every weight gradient (as many as forward) and the input gradients of all but the
    # first layer (observations need no gradient).
    actor_backward = actor_forward + rows * agents * (hidden * hidden + hidden * actions)
    # Critic: input -> hidden -> hidden -> 1. The first layer has a forward and a weight gradient,
    # the hidden one also an input gradient; the 1-unit output is a row-wise dot product, no GEMM.
    width = {"joint": observation * agents, "state": state_dim(agents), "local": observation}
    critic_first = rows * agents * width[critic] * hidden
    critic_hidden = rows * agents * hidden * hidden
    return 2 * (actor_forward + actor_backward + 2 * critic_first + 3 * critic_hidden)


@pytest.mark.parametrize("critic", CRITICS)
def test_gemm_flops_of_a_joint_step_match_a_hand_count(critic: CriticInput) -> None:
    agents, rows, hidden = 2, 16, 8
    torch.manual_seed(0)
    model, batch = model_and_batch(agents, rows=rows, hidden=hidden, critic=critic)
    counted = gemm_flops(joint_update(model, batch))
    # The step also logs feature_abs_corr, whose correlation matrix is a matrix product too.
    features = [torch.randn(rows, hidden) for _ in range(agents)]
    diagnostic = gemm_flops(lambda: mean_abs_correlation(features))
    assert counted == _hand_count(critic, agents, rows, hidden) + diagnostic
    assert diagnostic == 2 * rows * hidden * hidden  # one pair's [hidden, hidden] correlation


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


@pytest.mark.parametrize("critic", CRITICS)
def test_recorded_products_are_every_product_of_the_step(critic: CriticInput) -> None:
    torch.manual_seed(0)
    model, batch = model_and_batch(3, rows=16, hidden=8, critic=critic, activation="relu")
    step = joint_update(model, batch)
    products, in_step_ms = record_products(step)
    assert sum(p.flops for p in products) == gemm_flops(step)
    assert in_step_ms > 0
    assert {str(p.op.overloadpacket) for p in products} >= {"aten.bmm", "aten.baddbmm"}


def test_replayed_products_keep_their_layouts() -> None:
    # A transposed operand replays transposed: the replay times the product as the step ran it.
    left = torch.randn(4, 6).T
    products, _ = record_products(lambda: torch.mm(left, torch.randn(4, 5)))
    (product,) = products
    replayed = [arg.random() for arg in product.args if isinstance(arg, TensorLayout)]
    assert [t.stride() for t in replayed] == [(1, 6), (5, 1)]
    medians = replayed_medians_ms(products * 3, repeats=2)
    assert list(medians) == products and medians[product] > 0


def test_bench_loss_table_shows_where_the_step_goes(run_cli: Callable[..., Any]) -> None:
    result = run_cli(
        "bench", "loss", "--agents", "2", "--rows", "16", "--hidden", "8", "--repeats", "1",
        "--products",
    )  # fmt: skip
    assert result.exit_code == 0, result.err
    lines = result.out.splitlines()
    header = next(line for line in lines if "alone/floor" in line)
    assert header.split() == ["M", "joint", "gemm", "floor", "in", "step", "alone", "rest",
                              "alone/floor"]  # fmt: skip
    values = lines[lines.index(header) + 1].split()
    joint, in_step, rest = float(values[1]), float(values[3]), float(values[5])
    assert rest == pytest.approx(joint - in_step, abs=_rounding_slack(joint, in_step))
    listed = lines[lines.index(next(line for line in lines if line.startswith("M = 2:"))) + 2 :]
    # --products: one line per distinct product, e.g. "1  0.01  0.5  bmm 2x16x8 @ 2x8x8"
    assert listed and all(line.split()[3] in {"mm", "addmm", "bmm", "baddbmm"} for line in listed)
