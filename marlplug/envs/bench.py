"""``marlplug bench envs``: joint env steps per second through the TorchRL env, per backend.

Every backend runs the same scenarios side by side in one process, random actions, auto-resets
included; the table reports the median of the repeats and VMAS's speed-up over PettingZoo/mpe.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

import click
import torch

from marlplug.envs.factory import available_envs, make_env

SCENARIOS = ("cooperative_navigation", "predator_prey", "physical_deception", "keep_away")
NUM_ENVS = {"mpe": 1, "vmas": 1024}


def scenario_options(scenario: str, agents: int) -> dict[str, Any]:
    """The options benchmarked at ``agents`` agents (half of them adversaries where there are any)."""
    if scenario in {"predator_prey", "keep_away"}:
        return {"agents": agents, "adversaries": max(1, agents // 2)}
    return {"agents": agents}


def measure(
    backend: str, scenario: str, agents: int, *, num_envs: int, steps: int, repeats: int
) -> float:
    """Median joint env steps per second (``num_envs * steps / seconds``) over ``repeats``."""
    env = make_env(scenario, backend=backend, num_envs=num_envs, seed=0,
                   **scenario_options(scenario, agents))
    torch.manual_seed(0)
    with torch.no_grad():
        env.rollout(3, break_when_any_done=False)  # warm-up
        rates = []
        for _ in range(repeats):
            start = time.perf_counter()
            env.rollout(steps, break_when_any_done=False)
            rates.append(num_envs * steps / (time.perf_counter() - start))
    env.close()
    return statistics.median(rates)


def run_benchmark(
    *, agents: tuple[int, ...], scenarios: tuple[str, ...], steps: int, repeats: int,
    vmas_envs: int,
) -> list[dict[str, Any]]:
    """Measure every installed backend on ``scenarios`` x ``agents``; one row per measurement."""
    backends = [b for b in ("mpe", "vmas") if b in available_envs()]
    rows: list[dict[str, Any]] = []
    for scenario in scenarios:
        for count in agents:
            reference = None
            for backend in backends:
                num_envs = vmas_envs if backend == "vmas" else NUM_ENVS.get(backend, 1)
                rate = measure(backend, scenario, count, num_envs=num_envs, steps=steps,
                               repeats=repeats)
                row: dict[str, Any] = {
                    "backend": backend, "scenario": scenario, "agents": count,
                    "num_envs": num_envs, "steps_per_s": round(rate, 1),
                }
                if backend == "mpe":
                    reference = rate
                elif reference:
                    row["speedup_vs_mpe"] = round(rate / reference, 1)
                rows.append(row)
    return rows


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list for tools.")
@click.option("--agents", "agents", multiple=True, type=int, default=(3, 8), show_default=True,
              help="Numbers of agents M (repeat the option).")
@click.option("--scenario", "scenarios", multiple=True, type=click.Choice(SCENARIOS),
              default=SCENARIOS, help="Scenarios to measure (repeat the option); default all.")
@click.option("--steps", default=50, show_default=True, help="Steps per timed rollout.")
@click.option("--repeats", default=3, show_default=True, help="Timed rollouts; the median counts.")
@click.option("--vmas-envs", default=1024, show_default=True, help="Batch size on VMAS.")
def envs(
    as_json: bool, agents: tuple[int, ...], scenarios: tuple[str, ...], steps: int, repeats: int,
    vmas_envs: int,
) -> None:
    """Joint env steps/s with random actions: PettingZoo/mpe vs VMAS, side by side."""
    rows = run_benchmark(agents=agents, scenarios=scenarios, steps=steps, repeats=repeats,
                         vmas_envs=vmas_envs)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(f"{'scenario':<24}{'M':>3}  {'backend':<6}{'num_envs':>9}{'steps/s':>12}{'vs mpe':>9}")
    for row in rows:
        ratio = f"{row['speedup_vs_mpe']:.0f}x" if "speedup_vs_mpe" in row else ""
        click.echo(f"{row['scenario']:<24}{row['agents']:>3}  {row['backend']:<6}"
                   f"{row['num_envs']:>9}{row['steps_per_s']:>12,.0f}{ratio:>9}")
