"""Timing env steps for the benches: :func:`time_steps` (random-action steps the way a collector
takes them), :func:`simulator_rate` (VMAS alone at one size, for ``marlplug bench scaling``), and
the scenarios and options the env benches step (:data:`SCENARIOS`, :func:`scenario_options`).
``marlplug bench envs`` and its ``--copies`` comparison both time with these.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch
from torchrl.envs import EnvBase

from marlplug.envs.factory import make_env

__all__ = ["SCENARIOS", "SIM_REPEATS", "scenario_options", "simulator_rate", "time_steps"]

#: Timings of :func:`simulator_rate`; their median is the simulator's rate.
SIM_REPEATS = 5

SCENARIOS = ("cooperative_navigation", "predator_prey", "physical_deception", "keep_away")


def scenario_options(scenario: str, agents: int) -> dict[str, Any]:
    """The options benchmarked at ``agents`` agents (half of them adversaries where there are any)."""
    if scenario in {"predator_prey", "keep_away"}:
        return {"agents": agents, "adversaries": max(1, agents // 2)}
    return {"agents": agents}


def time_steps(env: EnvBase, tensordict: Any, steps: int) -> tuple[float, Any]:
    """Seconds for ``steps`` random-action steps (auto-resets included), and the last state.

    Steps the way a collector does (``rand_action`` then ``step_and_maybe_reset``), without
    stacking the trajectory, so the time is the env's own.
    """
    start = time.perf_counter()
    for _ in range(steps):
        tensordict = env.rand_action(tensordict)
        _, tensordict = env.step_and_maybe_reset(tensordict)
    return time.perf_counter() - start, tensordict


def simulator_rate(
    scenario: str,
    *,
    num_envs: int,
    agents: int,
    steps: int,
    threads: int,
    repeats: int = SIM_REPEATS,
) -> float:
    """Joint steps/s of ``scenario``'s VMAS env alone (random actions, auto-resets) at this size on
    ``threads`` torch threads: the median of ``repeats`` timings of ``steps`` steps each.

    One timing of a few tenths of a second moved by up to 1.7x between runs on an idle 2-core
    machine (M = 8, 256 copies: 44k to 74k steps/s), and train/sim with it; the median of five
    does not follow a single slow or fast burst.

    Examples:
        >>> simulator_rate("cooperative_navigation", num_envs=2, agents=2, steps=2, threads=1,
        ...                repeats=3) > 0
        True
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        env = make_env(scenario, backend="vmas", num_envs=num_envs, seed=0, agents=agents)
        with torch.no_grad():
            _, state = time_steps(env, env.reset(), 3)  # warm-up
            timings = []
            for _ in range(repeats):
                seconds, state = time_steps(env, state, steps)
                timings.append(seconds)
        env.close()
    finally:
        torch.set_num_threads(previous)
    return num_envs * steps / statistics.median(timings)
