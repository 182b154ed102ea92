"""The GEMM floor of a step (``marlplug bench loss``): its matrix-product FLOPs, counted by torch's
``FlopCounterMode``, at the fp32 rate of a reference product timed beside the step; and the interleaved
timer every row of that benchmark uses.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
from torch.utils.flop_counter import FlopCounterMode

#: The ops :func:`gemm_flops` counts: matrix products (FlopCounterMode also counts convolutions and
#: attention, which these networks do not run).
MATRIX_PRODUCTS = ("aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm")
#: The GEMM whose rate sets the floor: ``[1000, 2048] @ [2048, 1000]`` in fp32.
GEMM_SHAPE = (1000, 2048, 1000)


def interleaved_median_ms(
    functions: dict[str, Callable[[], object]],
    *,
    repeats: int,
    warmup: int = 2,
    after_round: Callable[[], None] | None = None,
) -> dict[str, float]:
    """Median wall time (ms) of each function, timed in interleaved rounds.

    Every round runs each function once, so a change in machine load hits all of them alike.
    ``after_round`` is called after each timed round, outside the timings (e.g. a progress bar).
    """
    for _ in range(warmup):
        for function in functions.values():
            function()
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repeats):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            times[name].append((time.perf_counter() - start) * 1e3)
        if after_round is not None:
            after_round()
    return {name: statistics.median(values) for name, values in times.items()}


def gemm_flops(function: Callable[[], object]) -> int:
    """The FLOPs (2 per multiply-add) of the matrix products (:data:`MATRIX_PRODUCTS`) that one call
    of ``function`` runs, forward and backward, as torch's ``FlopCounterMode`` counts them.

    Elementwise ops, reductions and the optimizer's update are not matrix products and not counted.

    >>> gemm_flops(lambda: torch.ones(4, 3) @ torch.ones(3, 2))  # 2 * 4 * 3 * 2
    48
    """
    with FlopCounterMode(display=False) as counter:
        function()
    counts = counter.get_flop_counts().get("Global", {})
    return sum(count for op, count in counts.items() if str(op) in MATRIX_PRODUCTS)


def gemm_reference(shape: tuple[int, int, int] = GEMM_SHAPE) -> tuple[Callable[[], object], float]:
    """The product whose rate sets the floor, and its GFLOP: ``[m, k] @ [k, n]`` in fp32, ``2·m·k·n``.

    Time it in the same interleaved rounds as the step it is a floor for, so that a change in
    the machine's speed (load, clocks) moves both alike.

    >>> product, gflop = gemm_reference((2, 3, 4))
    >>> tuple(product().shape), gflop
    ((2, 4), 4.8e-08)
    """
    m, k, n = shape
    left, right = torch.randn(m, k), torch.randn(k, n)
    return (lambda: left @ right), 2 * m * k * n / 1e9


def significant(value: float, digits: int = 4) -> float:
    """``value`` rounded to ``digits`` significant digits (FLOP counts span 1e-5 to 10 GFLOP).

    >>> significant(0.000089612), significant(1234.56)
    (8.961e-05, 1235.0)
    """
    return float(f"{value:.{digits}g}")


def with_gemm_floor(row: dict[str, float], rate_gflops: float) -> dict[str, float]:
    """``row`` (with ``joint_ms`` and ``gemm_gflop``) plus the GEMM floor: ``gemm_floor_ms``, the
    step's matrix FLOPs at ``rate_gflops`` GFLOP/s, and ``step_over_floor``, the step's time over it.

    >>> with_gemm_floor({"joint_ms": 3.0, "gemm_gflop": 0.1}, 50.0)
    {'joint_ms': 3.0, 'gemm_gflop': 0.1, 'gemm_gflops_rate': 50.0, 'gemm_floor_ms': 2.0, 'step_over_floor': 1.5}
    """
    floor_ms = row["gemm_gflop"] / rate_gflops * 1e3
    return {
        **row,
        "gemm_gflops_rate": significant(rate_gflops),
        "gemm_floor_ms": significant(floor_ms),
        "step_over_floor": significant(row["joint_ms"] / floor_ms),
    }
