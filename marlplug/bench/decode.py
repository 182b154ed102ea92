"""``marlplug bench decode``: decode time and accuracy of least squares, peeling and the authors' method.

All methods decode the same float32 results (M=10 agents, N=15 learners, 1e6 parameters per agent by
default) in one process; medians over repeats, plus each code's worst-case condition number. On a
terminal, a progress bar on stderr counts the timed decodes (methods x repeats).
"""

from __future__ import annotations

import functools
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click
import numpy as np
import torch
from rich.console import Console
from rich.table import Table

from marlplug.coding.codes import LDPCCode, MDSCode, VandermondeCode
from marlplug.coding.conditioning import matrix_condition, worst_condition
from marlplug.coding.decoding import (
    Decoder,
    LeastSquaresDecoder,
    PeelingDecoder,
    combine_rows,
    peeling_schedule,
)
from marlplug.runs.reporting import stderr_progress

TARGET_MS = 50.0


def first_full_rank_subset_decode(
    matrix: np.ndarray, arrival: list[int], results: list[torch.Tensor]
) -> torch.Tensor:
    """The authors' decoder: invert the first M arrived rows of full rank, ignore the rest."""
    chosen: list[int] = []
    for position in range(len(arrival)):
        if np.linalg.matrix_rank(matrix[[arrival[i] for i in [*chosen, position]]]) > len(chosen):
            chosen.append(position)
        if len(chosen) == matrix.shape[1]:
            break
    inverse = np.linalg.inv(matrix[[arrival[i] for i in chosen]])
    return combine_rows(inverse, [results[i] for i in chosen])


@dataclass
class Case:
    """One code's results for one straggler pattern."""

    code: str
    matrix: np.ndarray
    arrival: list[int]
    results: list[torch.Tensor]


#: A decode method under test: ``(name, code, decode a case)``.
Method = tuple[str, str, Callable[[Case], torch.Tensor]]


def _decode_with(decoder: Decoder, case: Case) -> torch.Tensor:
    for learner, result in zip(case.arrival, case.results, strict=True):
        decoder.add(learner, result)
    return decoder.decode()


def _make_case(
    code: str, matrix: np.ndarray, theta: torch.Tensor, stragglers: int, seed: int
) -> Case:
    rng = np.random.default_rng(seed)
    num_learners = matrix.shape[0]
    for _ in range(1000):
        arrival = rng.permutation(num_learners)[: num_learners - stragglers].tolist()
        if code != "ldpc" or peeling_schedule(matrix, arrival) is not None:
            break
    coded = combine_rows(matrix, list(theta))  # float64 accumulation, float32 results
    return Case(code, matrix, arrival, [coded[learner] for learner in arrival])


def _time_ms(
    run: Callable[[], torch.Tensor],
    repeats: int,
    after_repeat: Callable[[], None] | None = None,
) -> tuple[float, torch.Tensor]:
    out = run()  # warm-up, and the output whose error is reported
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1e3)
        if after_repeat is not None:  # outside the timing: a progress bar
            after_repeat()
    return statistics.median(samples), out


def _time_methods(
    methods: list[Method], cases: dict[str, Case], theta: torch.Tensor, repeats: int
) -> list[dict[str, Any]]:
    """One row per ``(name, code, decode)`` method: median decode time and relative error, with a
    progress bar on stderr (terminals only) over methods x repeats."""
    theta64_norm = float(theta.double().norm())
    rows: list[dict[str, Any]] = []
    with stderr_progress(len(methods) * repeats, label="bench decode") as progress:
        for method, code, run in methods:
            case = cases[code]
            progress.advance(f"{method} on {code}", steps=0)
            decode_ms, out = _time_ms(functools.partial(run, case), repeats, progress.advance)
            error = float((out.double() - theta.double()).norm()) / theta64_norm
            rows.append(
                {
                    "name": method,
                    "code": code,
                    "decode_ms": round(decode_ms, 2),
                    "rel_error": error,
                    "received_condition": matrix_condition(case.matrix[case.arrival]),
                    "within_target": decode_ms < TARGET_MS,
                }
            )
            del out
    return rows


@click.command()
@click.option(
    "--agents", "-M", "num_agents", type=click.IntRange(min=1), default=10, show_default=True
)
@click.option(
    "--learners", "-N", "num_learners", type=click.IntRange(min=1), default=15, show_default=True
)
@click.option(
    "--params",
    "num_params",
    type=click.IntRange(min=1),
    default=1_000_000,
    show_default=True,
    help="float32 parameters per agent (D).",
)
@click.option(
    "--stragglers",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Learners that never answer.",
)
@click.option("--repeats", type=click.IntRange(min=1), default=5, show_default=True)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="torch threads (the controller's).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object for tools.")
def decode(
    num_agents: int,
    num_learners: int,
    num_params: int,
    stragglers: int,
    repeats: int,
    threads: int,
    seed: int,
    as_json: bool,
) -> None:
    """Decode time (median ms) and relative error of least squares, peeling and the authors' method."""
    if not 0 <= stragglers <= num_learners - num_agents:
        raise click.BadParameter(
            f"must be between 0 and N-M={num_learners - num_agents}", param_hint="--stragglers"
        )
    torch.set_num_threads(threads)
    theta = torch.randn(num_agents, num_params, generator=torch.Generator().manual_seed(seed))
    schemes = {"mds": MDSCode(), "vandermonde": VandermondeCode(), "ldpc": LDPCCode()}
    cases = {
        name: _make_case(
            name, scheme.assignment_matrix(num_agents, num_learners, seed), theta, stragglers, seed
        )
        for name, scheme in schemes.items()
    }
    inf = float("inf")
    methods: list[Method] = [
        ("least_squares", "mds", lambda c: _decode_with(LeastSquaresDecoder(c.matrix), c)),
        (
            "authors_first_subset",
            "mds",
            lambda c: first_full_rank_subset_decode(c.matrix, c.arrival, c.results),
        ),
        ("peeling", "ldpc", lambda c: _decode_with(PeelingDecoder(c.matrix), c)),
        ("least_squares", "ldpc", lambda c: _decode_with(LeastSquaresDecoder(c.matrix), c)),
        (
            "least_squares",
            "vandermonde",
            lambda c: _decode_with(LeastSquaresDecoder(c.matrix, max_condition=inf), c),
        ),
        (
            "authors_first_subset",
            "vandermonde",
            lambda c: first_full_rank_subset_decode(c.matrix, c.arrival, c.results),
        ),
    ]
    rows = _time_methods(methods, cases, theta, repeats)
    baseline_ms = rows[0]["decode_ms"]  # least squares on mds
    for row in rows:
        row["ratio_to_least_squares_mds"] = round(row["decode_ms"] / baseline_ms, 3)
    conditions = {name: worst_condition(case.matrix).worst for name, case in cases.items()}
    report = {
        "agents": num_agents,
        "learners": num_learners,
        "params_per_agent": num_params,
        "dtype": "float32",
        "stragglers": stragglers,
        "threads": threads,
        "repeats": repeats,
        "target_ms": TARGET_MS,
        "methods": rows,
        "worst_condition": conditions,
    }
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    table = Table(
        title=f"Decode M={num_agents}, N={num_learners}, D={num_params:,} float32, "
        f"{stragglers} stragglers, {threads} thread(s), median of {repeats}"
    )
    for column in ("method", "code", "decode ms", "× LS mds", "rel. error", "cond. received"):
        table.add_column(column, justify="left" if column in ("method", "code") else "right")
    for row in rows:
        table.add_row(
            row["name"],
            row["code"],
            f"{row['decode_ms']:.1f}",
            f"{row['ratio_to_least_squares_mds']:.2f}",
            f"{row['rel_error']:.2e}",
            f"{row['received_condition']:.2e}",
        )
    console = Console()
    console.print(table)
    console.print(
        "worst-case condition: " + ", ".join(f"{k} {v:.2e}" for k, v in conditions.items())
    )
