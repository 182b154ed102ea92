"""``marlplug bench envs``: joint env steps per second through the TorchRL env, per backend.

Both backends run the same scenario and agent count side by side in one process: the envs are
built once, warmed up, then timed in interleaved trials (mpe, vmas, vmas, mpe, ...), so load
from other processes on a shared machine hits both alike. Each row reports the median over
its trials and VMAS's speed-up over PettingZoo/mpe (``ratio``, median over median). On a terminal,
a progress bar on stderr counts the timed trials (scenarios x agent counts x backends x trials).
:mod:`marlplug.bench.env_steps` does the timing, for this bench and ``marlplug bench scaling``.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from typing import Any

import click
import torch

from marlplug.bench.env_steps import SCENARIOS, scenario_options, time_steps
from marlplug.envs.copies import COPIES
from marlplug.envs.factory import available_envs, make_env
from marlplug.runs.reporting import stderr_progress

BACKENDS = ("mpe", "vmas")


def compare(
    scenario: str,
    agents: int,
    *,
    backends: tuple[str, ...],
    steps: int,
    trials: int,
    vmas_envs: int,
    after_trial: Callable[[], None] | None = None,
) -> list[dict[str, Any]]:
    """Interleaved trials of every backend on one scenario; one row per backend.

    Trial ``t`` runs the backends in order when ``t`` is even and in reverse when odd, so
    neither always goes first. Each row carries its per-trial rates and the median.
    ``after_trial`` is called after each backend's timed trial, outside the timing.
    """
    num_envs = {backend: vmas_envs if backend == "vmas" else 1 for backend in backends}
    envs, states = {}, {}
    torch.manual_seed(0)
    with torch.no_grad():
        for backend in backends:
            env = make_env(
                scenario,
                backend=backend,
                num_envs=num_envs[backend],
                seed=0,
                **scenario_options(scenario, agents),
            )
            _, states[backend] = time_steps(env, env.reset(), 3)  # warm-up
            envs[backend] = env
        rates: dict[str, list[float]] = {backend: [] for backend in backends}
        for trial in range(trials):
            for backend in backends if trial % 2 == 0 else tuple(reversed(backends)):
                seconds, states[backend] = time_steps(envs[backend], states[backend], steps)
                rates[backend].append(num_envs[backend] * steps / seconds)
                if after_trial is not None:
                    after_trial()
    for env in envs.values():
        env.close()
    medians = {backend: statistics.median(values) for backend, values in rates.items()}
    ratio = round(medians["vmas"] / medians["mpe"], 1) if {"mpe", "vmas"} <= set(medians) else None
    return [
        {
            "backend": backend,
            "scenario": scenario,
            "agents": agents,
            "num_envs": num_envs[backend],
            "steps_per_s": round(medians[backend], 1),
            "trials": trials,
            "trial_steps_per_s": [round(rate, 1) for rate in rates[backend]],
            "ratio": ratio,
        }
        for backend in backends
    ]


def run_benchmark(
    *,
    agents: tuple[int, ...],
    scenarios: tuple[str, ...],
    steps: int,
    trials: int,
    vmas_envs: int,
    threads: int | None = None,
) -> list[dict[str, Any]]:
    """Measure every installed backend on ``scenarios`` x ``agents``; one row per measurement.

    ``ratio`` is VMAS's median over mpe's median for the same scenario and agent count (``None``
    when only one backend is installed). ``threads`` sets torch's intra-op threads for the run.
    A progress bar on stderr (terminals only) counts the timed trials.

    Examples:
        >>> rows = run_benchmark(agents=(2,), scenarios=("keep_away",), steps=2, trials=1,
        ...                      vmas_envs=4)
        >>> sorted(rows[0])[:4]
        ['agents', 'backend', 'num_envs', 'ratio']
    """
    backends = tuple(b for b in BACKENDS if b in available_envs())
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    total = len(scenarios) * len(agents) * len(backends) * trials
    try:
        rows: list[dict[str, Any]] = []
        with stderr_progress(total, label="bench envs") as progress:
            for scenario in scenarios:
                for count in agents:
                    progress.advance(f"{scenario} M={count}", steps=0)
                    rows += compare(
                        scenario,
                        count,
                        backends=backends,
                        steps=steps,
                        trials=trials,
                        vmas_envs=vmas_envs,
                        after_trial=progress.advance,
                    )
    finally:
        torch.set_num_threads(previous)
    for row in rows:
        row["threads"] = threads if threads is not None else previous
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    """The human table: one line per row, the ratio on the vmas line."""
    lines = [
        f"{'scenario':<24}{'M':>3}  {'backend':<6}{'num_envs':>9}{'steps/s':>12}"
        f"{'trials':>8}{'vmas/mpe':>10}"
    ]
    for row in rows:
        ratio = (
            f"{row['ratio']:,.0f}x" if row["ratio"] is not None and row["backend"] == "vmas" else ""
        )
        lines.append(
            f"{row['scenario']:<24}{row['agents']:>3}  {row['backend']:<6}"
            f"{row['num_envs']:>9}{row['steps_per_s']:>12,.0f}{row['trials']:>8}"
            f"{ratio:>10}"
        )
    return "\n".join(lines)


def _env_keys(
    context: click.Context, parameter: click.Parameter, values: tuple[str, ...]
) -> tuple[str, ...]:
    for value in values:
        backend, _, name = value.partition("/")
        if not backend or not name:
            raise click.BadParameter(f"'{value}': expected BACKEND/NAME, e.g. mpe/keep_away")
    return values


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list for tools.")
@click.option(
    "--agents",
    "agents",
    multiple=True,
    type=int,
    default=(3, 8),
    show_default=True,
    help="Numbers of agents M (repeat the option).",
)
@click.option(
    "--scenario",
    "scenarios",
    multiple=True,
    type=click.Choice(SCENARIOS),
    default=SCENARIOS,
    help="Scenarios to measure (repeat the option); default all.",
)
@click.option(
    "--steps",
    default=100,
    show_default=True,
    type=click.IntRange(min=1),
    help="Env steps per timed trial.",
)
@click.option(
    "--trials",
    default=5,
    show_default=True,
    type=click.IntRange(min=1),
    help="Interleaved timed trials per backend; rows report the median.",
)
@click.option(
    "--vmas-envs",
    default=1024,
    show_default=True,
    type=click.IntRange(min=1),
    help="Batch size on VMAS.",
)
@click.option(
    "--threads",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="torch intra-op threads (1 avoids thread contention on shared machines).",
)
@click.option(
    "--quick", is_flag=True, help="Smoke run in seconds: M = 3, 5 steps, 2 trials, 32 VMAS envs."
)
@click.option(
    "--copies",
    "copies",
    multiple=True,
    type=click.Choice(COPIES),
    help="Instead of mpe vs VMAS: a non-vectorized env's copies run each of these ways (env.copies; "
    "repeat the option: --copies serial --copies processes --copies ray) side by side, each with "
    "its steps/s over serial's.",
)
@click.option(
    "--env",
    "env_keys",
    multiple=True,
    callback=_env_keys,
    help="BACKEND/NAME of an env for --copies (repeat the option); default "
    "mpe/cooperative_navigation (at --agents) and gymnasium/Foraging-8x8-2p-2f-coop-v3 (LBF).",
)
@click.option(
    "--num-envs",
    default=2,
    show_default=True,
    type=click.IntRange(min=2),
    help="Env copies (train.num_envs) for --copies.",
)
def envs(
    as_json: bool,
    agents: tuple[int, ...],
    scenarios: tuple[str, ...],
    steps: int,
    trials: int,
    vmas_envs: int,
    threads: int,
    quick: bool,
    copies: tuple[str, ...],
    env_keys: tuple[str, ...],
    num_envs: int,
) -> None:
    """Joint env steps/s with random actions: PettingZoo/mpe vs VMAS, interleaved trials.

    With --copies: the env copies in one process, in worker processes or on Ray (env.copies).
    """
    if quick:
        # A smoke run of every scenario in seconds; the numbers are not meaningful.
        agents, steps, trials, vmas_envs = (3,), 5, 2, 32
    if copies:
        from marlplug.bench.copies import DEFAULT_ENVS, format_copies_table, run_copies_benchmark

        rows = run_copies_benchmark(
            envs=env_keys or DEFAULT_ENVS,
            agents=agents,
            modes=copies,
            num_envs=num_envs,
            steps=steps,
            trials=trials,
            threads=threads,
        )
        click.echo(json.dumps(rows, indent=2) if as_json else format_copies_table(rows))
        return
    if env_keys:
        raise click.UsageError("--env chooses the envs of a --copies comparison; add --copies")
    rows = run_benchmark(
        agents=agents,
        scenarios=scenarios,
        steps=steps,
        trials=trials,
        vmas_envs=vmas_envs,
        threads=threads,
    )
    click.echo(json.dumps(rows, indent=2) if as_json else format_table(rows))
