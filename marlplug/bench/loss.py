"""``marlplug bench loss``: JointPPOLoss vs M separate ClipPPOLoss modules, and the redundancy penalty's cost.

(a) one forward + backward + per-agent clip + Adam step, joint vs separate, M in {2, 8, 32} (the two
sides are built in :mod:`marlplug.bench.loss_sides`);
(b) the exact all-pairs redundancy penalty (forward + backward) vs a pair loop and vs one Gram product;
(c) the joint step's GEMM floor (:mod:`marlplug.bench.gemm_floor`): its matrix-product FLOPs at the
fp32 GEMM rate of a reference product, and the step's time over it;
(d) where the step's time goes beyond that floor (:mod:`marlplug.bench.gemm_replay`): its matrix
products timed inside the step, and the same products replayed alone at their own shapes.
All implementations of one row, and the reference product, are timed in interleaved rounds (medians),
so load and clock changes hit them alike.
On a terminal, a progress bar on stderr counts the rounds (M values x repeats).
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable
from typing import Any, get_args

import click
import torch

from marlplug.bench.gemm_floor import (
    GEMM_SHAPE,
    gemm_flops,
    gemm_reference,
    interleaved_median_ms,
    significant,
    with_gemm_floor,
)
from marlplug.bench.gemm_replay import MatrixProduct, record_products, replayed_medians_ms
from marlplug.bench.loss_sides import joint_update, model_and_batch, separate_update
from marlplug.losses.redundancy import (
    redundancy_all_pairs,
    redundancy_pair_loop,
    standardize_columns,
)
from marlplug.nn.actor_critic import Activation
from marlplug.nn.critic_input import CriticInput
from marlplug.runs.reporting import stderr_progress


def gram_floor(standardized: torch.Tensor) -> torch.Tensor:
    """The issue's floor: ``‖G‖_F²`` of one Gram product of the concatenated standardized features,
    in the cheaper orientation (``‖YᵀY‖_F = ‖YYᵀ‖_F``), timed with autograd's backward.

    Autograd differentiates the product as two more Gram-sized products; the penalty's own backward
    takes one and its forward computes only the Gram's upper triangle, so it can run below this
    "floor" (docs/results/speed.md; the FLOP counts: docs/notes/benchmarks-history.md,
    "Joint PPO")."""
    rows, columns = standardized.shape
    gram = standardized.T @ standardized if columns <= rows else standardized @ standardized.T
    return gram.square().sum()


def measure(
    n_agents: int,
    *,
    rows: int = 1000,
    hidden: int = 64,
    repeats: int = 10,
    critic: CriticInput = "joint",
    activation: Activation = "tanh",
    after_round: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """One row of the benchmark: timings (ms) for ``n_agents`` agents whose critics read ``critic``,
    and ``gemm_gflop``, the matrix-product GFLOP of one joint step (:func:`gemm_flops`: actor and
    critic forward and backward, and the ``feature_abs_corr`` diagnostic's product; not the critic's
    one-unit output layer, a row-wise dot product), and the floor it sets
    (:func:`~marlplug.bench.gemm_floor.with_gemm_floor`) at the rate of the reference product
    (:func:`~marlplug.bench.gemm_floor.gemm_reference`) timed in the same rounds.

    Where the step's time goes (:mod:`marlplug.bench.gemm_replay`): ``gemm_in_step_ms``, the time
    of its matrix products inside a step that runs in the same rounds with every product timed;
    ``gemm_alone_ms``, the same products replayed alone at their shapes, and
    ``gemm_alone_over_floor``, that time over the floor at the reference product's rate in the
    replay's own rounds (``replay_gflops_rate``); ``rest_ms``, the step's time outside its
    products; ``products``, one row per distinct product (:func:`_product_rows`). ``after_round``
    is called after each of the ``repeats`` timed rounds."""
    torch.manual_seed(0)
    model, batch = model_and_batch(
        n_agents, rows=rows, hidden=hidden, critic=critic, activation=activation
    )
    joint_step = joint_update(model, batch)
    gemm_gflop = gemm_flops(joint_step) / 1e9

    separate_step = separate_update(
        n_agents, batch, hidden=hidden, critic=critic, activation=activation
    )

    features = [torch.randn(rows, hidden, requires_grad=True) for _ in range(n_agents)]
    standardized = standardize_columns(
        torch.cat([f.detach() for f in features], 1), 1e-5
    ).requires_grad_()

    def backward(function: Callable[[], torch.Tensor]) -> Callable[[], None]:
        return lambda: function().backward()

    product, product_gflop = gemm_reference()
    in_step_ms: list[float] = []  # the products' time in each step of "recorded"
    timings = interleaved_median_ms(
        {
            "gemm": product,
            "joint": joint_step,
            "recorded": lambda: in_step_ms.append(record_products(joint_step)[1]),
            "separate": separate_step,
            "redundancy": backward(lambda: redundancy_all_pairs(features)),
            "pairloop": backward(lambda: redundancy_pair_loop(features)),
            "floor": backward(lambda: gram_floor(standardized)),
        },
        repeats=repeats,
        after_round=after_round,
    )
    joint_ms, separate_ms = timings["joint"], timings["separate"]
    redundancy_ms, pairloop_ms, floor_ms = (
        timings["redundancy"],
        timings["pairloop"],
        timings["floor"],
    )
    row = {
        "agents": n_agents,
        "joint_ms": round(joint_ms, 3),
        "separate_ms": round(separate_ms, 3),
        "speedup": round(separate_ms / joint_ms, 3),
        "redundancy_ms": round(redundancy_ms, 3),
        "redundancy_pairloop_ms": round(pairloop_ms, 3),
        "redundancy_floor_ms": round(floor_ms, 3),
        "redundancy_ratio": round(redundancy_ms / joint_ms, 3),
        "pairloop_over_redundancy": round(pairloop_ms / redundancy_ms, 3),
        "redundancy_over_floor": round(redundancy_ms / floor_ms, 3),
        "gemm_gflop": significant(gemm_gflop),
    }
    row = with_gemm_floor(row, product_gflop / (timings["gemm"] * 1e-3))
    step_products, _ = record_products(joint_step)
    (reference,), _ = record_products(product)
    medians = replayed_medians_ms([*step_products, reference], repeats=repeats)
    alone_ms = sum(medians[p] for p in step_products)
    products_in_step_ms = statistics.median(in_step_ms[-repeats:])
    return {
        **row,
        "gemm_in_step_ms": significant(products_in_step_ms),
        "rest_ms": significant(joint_ms - products_in_step_ms),
        "gemm_alone_ms": significant(alone_ms),
        "gemm_alone_over_floor": significant(
            alone_ms / (gemm_gflop / product_gflop * medians[reference])
        ),
        "replay_gflops_rate": significant(reference.flops / medians[reference] / 1e6),
        "products": _product_rows(step_products, medians),
    }


def _product_rows(
    products: list[MatrixProduct], medians: dict[MatrixProduct, float]
) -> list[dict[str, float | str]]:
    """One row per distinct product of the step: its calls, their time replayed alone (ms) and
    its rate (GFLOP/s)."""
    return [
        {
            "product": product.describe(),
            "calls": calls,
            "alone_ms": significant(medians[product] * calls),
            "gflops_rate": significant(product.flops / medians[product] / 1e6),
        }
        for product, calls in Counter(products).items()
    ]


@click.command()
@click.option(
    "--agents",
    "agent_counts",
    multiple=True,
    type=click.IntRange(min=1),
    default=(2, 8, 32),
    show_default=True,
)
@click.option(
    "--rows", default=1000, show_default=True, type=click.IntRange(min=2), help="Minibatch rows B."
)
@click.option(
    "--hidden",
    default=64,
    show_default=True,
    type=click.IntRange(min=1),
    help="Hidden units (and feature width).",
)
@click.option(
    "--repeats",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="Timed repetitions (median reported).",
)
@click.option(
    "--threads",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="torch intra-op threads (1: least noise on a shared machine; torch's default is all cores).",
)
@click.option(
    "--critic",
    type=click.Choice(get_args(CriticInput)),
    default="joint",
    show_default=True,
    help="What every critic reads: all observations (joint), a global state 6·M wide (state), "
    "its own observation (local).",
)
@click.option(
    "--activation",
    type=click.Choice(get_args(Activation)),
    default="tanh",
    show_default=True,
    help="The hidden layers' nonlinearity on both sides (PPO's algorithm.activation).",
)
@click.option(
    "--products",
    "show_products",
    is_flag=True,
    help="Also list the joint step's matrix products: calls, time replayed alone, GFLOP/s.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object per M.")
def loss(
    agent_counts: tuple[int, ...],
    rows: int,
    hidden: int,
    repeats: int,
    threads: int,
    critic: CriticInput,
    activation: Activation,
    show_products: bool,
    as_json: bool,
) -> None:
    """JointPPOLoss vs M separate ClipPPOLoss and its GEMM floor; the redundancy penalty's cost.

    The redundancy penalty runs all-pairs, as a pair loop and as one Gram product."""
    torch.set_num_threads(threads)
    results: list[dict[str, Any]] = []
    with stderr_progress(len(agent_counts) * repeats, label="bench loss") as progress:
        for m in agent_counts:
            progress.advance(f"M={m}", steps=0)
            row = measure(
                m,
                rows=rows,
                hidden=hidden,
                repeats=repeats,
                critic=critic,
                activation=activation,
                after_round=progress.advance,
            )
            results.append(
                {
                    **row,
                    "critic": critic,
                    "activation": activation,
                    "threads": threads,
                }
            )
    if as_json:
        click.echo(json.dumps(results, indent=2))
        return
    gemm = "x".join(map(str, GEMM_SHAPE))
    click.echo(
        f"B={rows}, hidden={hidden}, critic={critic}, activation={activation}, "
        f"torch threads={threads}, medians of {repeats} (ms); GEMM rate: an fp32 {gemm} product "
        "timed in the same rounds"
    )
    columns = {
        "M": "agents",
        "joint": "joint_ms",
        "separate": "separate_ms",
        "speedup": "speedup",
        "redund.": "redundancy_ms",
        "pairloop": "redundancy_pairloop_ms",
        "floor": "redundancy_floor_ms",
        "loop/red.": "pairloop_over_redundancy",
        "red./floor": "redundancy_over_floor",
        "red./joint": "redundancy_ratio",
        "gemm GFLOP": "gemm_gflop",
        "GFLOP/s": "gemm_gflops_rate",
        "gemm floor": "gemm_floor_ms",
        "step/floor": "step_over_floor",
    }
    _echo_table(columns, results)
    click.echo(
        "\nWhere the joint step's time goes (ms): its matrix products timed inside the step, the "
        "same products replayed alone at their shapes (warm caches), and the rest of the step"
    )
    _echo_table(
        {
            "M": "agents",
            "joint": "joint_ms",
            "gemm floor": "gemm_floor_ms",
            "in step": "gemm_in_step_ms",
            "alone": "gemm_alone_ms",
            "rest": "rest_ms",
            "alone/floor": "gemm_alone_over_floor",
        },
        results,
    )
    if show_products:
        for result in results:
            click.echo(
                f"\nM = {result['agents']}: the joint step's matrix products replayed alone "
                f"(the reference product: {result['replay_gflops_rate']} GFLOP/s)"
            )
            _echo_table(
                {
                    "calls": "calls",
                    "ms": "alone_ms",
                    "GFLOP/s": "gflops_rate",
                    "product": "product",
                },
                result["products"],
                align={"product": "<"},
            )


def _echo_table(
    columns: dict[str, str],
    results: list[dict[str, Any]],
    align: dict[str, str] | None = None,
) -> None:
    """One header line and one line per result, in 12-character columns, right-aligned; a key
    that ``align`` maps to ``"<"`` is written as is, after two spaces (a last, text column)."""
    align = align or {}

    def cell(value: object, key: str) -> str:
        return f"  {value}" if align.get(key) == "<" else f"{value:>12}"

    click.echo("".join(cell(header, key) for header, key in columns.items()))
    for result in results:
        click.echo("".join(cell(result[key], key) for key in columns.values()))
