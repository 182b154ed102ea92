"""``marlplug bench envs --copies serial --copies processes --copies ray``: a non-vectorized env's
copies stepped in this process (``env.copies: serial``) against one worker process each
(``processes``) and one Ray actor each (``ray``, a local Ray unless ``RAY_ADDRESS`` names a cluster).

Each env is built once (the seconds a start takes are reported apart), warmed up, then timed in
interleaved trials (serial, processes, processes, serial, ...) of random-action steps with
auto-resets, as :func:`marlplug.bench.env_steps.time_steps` steps them; each row gives the median
joint steps/s summed over the copies (frames/s), ``vs_serial``, its median over serial's, and
``ratio``, processes' median over serial's.
The CPU model is printed with the table: the ratio is a property of the machine (its cores, and
what else runs on them).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from marlplug.bench.env_steps import SCENARIOS, scenario_options, time_steps
from marlplug.envs.copies import COPIES
from marlplug.envs.factory import make_env
from marlplug.runs.machine import cpu_model
from marlplug.runs.reporting import stderr_progress

#: What ``--copies`` measures unless ``--env`` says otherwise: mpe (sized by ``--agents``) and LBF.
DEFAULT_ENVS = ("mpe/cooperative_navigation", "gymnasium/Foraging-8x8-2p-2f-coop-v3")


def sized_by_agents(env_key: str) -> bool:
    """Whether ``--agents`` sizes ``env_key``: the paper's scenarios on mpe; other envs (LBF's
    tasks name their players) run at their own size.

    >>> sized_by_agents("mpe/predator_prey"), sized_by_agents("gymnasium/Foraging-8x8-2p-2f-coop-v3")
    (True, False)
    """
    backend, _, name = env_key.partition("/")
    return backend == "mpe" and name in SCENARIOS


def env_options(env_key: str, agents: int | None) -> dict[str, Any]:
    """The options ``env_key`` is measured with: the paper's scenarios on mpe at ``agents``
    agents (as ``marlplug bench envs`` sizes them); any other env at its own size.

    Examples:
        >>> env_options("mpe/keep_away", 4), env_options("gymnasium/Foraging-8x8-2p-2f-coop-v3", 4)
        ({'agents': 4, 'adversaries': 2}, {})
    """
    if sized_by_agents(env_key) and agents is not None:
        return scenario_options(env_key.partition("/")[2], agents)
    return {}


def compare_copies(
    env_key: str,
    agents: int | None,
    *,
    modes: Sequence[str],
    num_envs: int,
    steps: int,
    trials: int,
    after_trial: Callable[[], None] | None = None,
) -> list[dict[str, Any]]:
    """Interleaved trials of ``env_key``'s ``num_envs`` copies run each way in ``modes``; one row
    per mode. Trial ``t`` runs the modes in order when ``t`` is even and in reverse when odd.

    Examples:
        >>> rows = compare_copies("mpe/cooperative_navigation", 2, modes=["serial"], num_envs=2,
        ...                       steps=2, trials=1)
        >>> rows[0]["copies"], rows[0]["agents"], rows[0]["steps_per_s"] > 0, rows[0]["ratio"]
        ('serial', 2, True, None)
    """
    backend, _, name = env_key.partition("/")
    envs: dict[str, Any] = {}
    states: dict[str, Any] = {}
    start_s: dict[str, float] = {}
    rates: dict[str, list[float]] = {mode: [] for mode in modes}
    torch.manual_seed(0)
    try:
        with torch.no_grad():
            for mode in modes:
                started = time.perf_counter()
                envs[mode] = make_env(
                    name,
                    backend=backend,
                    num_envs=num_envs,
                    seed=0,
                    copies=mode,  # type: ignore[arg-type]  # a COPIES choice
                    **env_options(env_key, agents),
                )
                start_s[mode] = time.perf_counter() - started
                _, states[mode] = time_steps(envs[mode], envs[mode].reset(), 3)  # warm-up
            team = sum(len(names) for names in envs[modes[0]].group_map.values())
            for trial in range(trials):
                for mode in modes if trial % 2 == 0 else tuple(reversed(modes)):
                    seconds, states[mode] = time_steps(envs[mode], states[mode], steps)
                    rates[mode].append(num_envs * steps / seconds)
                    if after_trial is not None:
                        after_trial()
    finally:
        for env in envs.values():
            env.close()
    medians = {mode: statistics.median(values) for mode, values in rates.items()}
    versus_serial = {
        mode: round(median / medians["serial"], 2) if "serial" in medians else None
        for mode, median in medians.items()
    }
    ratio = versus_serial.get("processes")
    return [
        {
            "env": env_key,
            "agents": team,
            "copies": mode,
            "num_envs": num_envs,
            "steps_per_s": round(medians[mode], 1),
            "trials": trials,
            "trial_steps_per_s": [round(rate, 1) for rate in rates[mode]],
            "start_s": round(start_s[mode], 2),
            "vs_serial": versus_serial[mode],
            "ratio": ratio,
        }
        for mode in modes
    ]


def run_copies_benchmark(
    *,
    envs: Sequence[str],
    agents: Sequence[int],
    modes: Sequence[str],
    num_envs: int,
    steps: int,
    trials: int,
    threads: int | None = None,
) -> list[dict[str, Any]]:
    """:func:`compare_copies` for every env (the mpe scenarios at every count in ``agents``); each
    row also carries the torch threads of this process and the CPU model.

    Examples:
        >>> rows = run_copies_benchmark(envs=["mpe/keep_away"], agents=[2, 3], modes=["serial"],
        ...                             num_envs=2, steps=2, trials=1, threads=1)
        >>> [(row["env"], row["agents"], row["threads"]) for row in rows]
        [('mpe/keep_away', 2, 1), ('mpe/keep_away', 3, 1)]
    """
    modes = [mode for mode in COPIES if mode in modes]  # serial first, each once
    sizes = {env_key: list(agents) if env_options(env_key, 1) else [None] for env_key in envs}
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    total = sum(len(counts) for counts in sizes.values()) * len(modes) * trials
    rows: list[dict[str, Any]] = []
    try:
        with stderr_progress(total, label="bench envs --copies") as progress:
            for env_key, counts in sizes.items():
                for count in counts:
                    progress.advance(f"{env_key} M={count or 'task'}", steps=0)
                    rows += compare_copies(
                        env_key,
                        count,
                        modes=modes,
                        num_envs=num_envs,
                        steps=steps,
                        trials=trials,
                        after_trial=progress.advance,
                    )
    finally:
        torch.set_num_threads(previous)
    cpu = cpu_model()
    for row in rows:
        row["threads"] = threads if threads is not None else previous
        row["cpu"] = cpu
    return rows


def format_copies_table(rows: Sequence[dict[str, Any]]) -> str:
    """The human table: the CPU on the first line, then one line per row, each row but serial's
    with its steps/s over serial's.

    Examples:
        >>> row = {"env": "mpe/keep_away", "agents": 2, "copies": "processes", "num_envs": 2,
        ...        "steps_per_s": 2400.0, "trials": 5, "start_s": 9.1, "vs_serial": 1.85,
        ...        "threads": 1, "cpu": "AMD EPYC"}
        >>> print(format_copies_table([row]))
        CPU: AMD EPYC; torch threads in this process: 1
        env                                      M  copies     envs     steps/s  trials  start s  vs serial
        mpe/keep_away                            2  processes     2       2,400       5      9.1      1.85x
    """
    first = rows[0] if rows else {"cpu": cpu_model(), "threads": torch.get_num_threads()}
    lines = [
        f"CPU: {first['cpu']}; torch threads in this process: {first['threads']}",
        f"{'env':<40}{'M':>2}  {'copies':<10}{'envs':>5}{'steps/s':>12}{'trials':>8}"
        f"{'start s':>9}{'vs serial':>11}",
    ]
    for row in rows:
        versus = row.get("vs_serial")
        shown = f"{versus:.2f}x" if versus is not None and row["copies"] != "serial" else ""
        lines.append(
            f"{row['env']:<40}{row['agents']:>2}  {row['copies']:<10}{row['num_envs']:>5}"
            f"{row['steps_per_s']:>12,.0f}{row['trials']:>8}{row['start_s']:>9.1f}{shown:>11}"
        )
    return "\n".join(lines)
