"""``marlplug bench scaling``: end-to-end training frames/s on VMAS as env copies and agents grow.

Each point is a real ``marlplug train`` run of the packaged fast-path config
(``marlplug/configs/spread_vmas.yaml``: cooperative navigation on VMAS) with ``train.num_envs`` and
``env.agents`` changed, a few updates long, in a temporary run folder (checkpoints and CSV metrics
included). Two sweeps: copies at a fixed number of agents, then agents at a fixed number of copies.
Each row reports the run's frames/s as the trainer counts it (env steps x copies over the training
loop's wall time, the first update's warm-up included: give more ``--updates`` to dilute it), the
shares of that time spent collecting, in minibatch updates and elsewhere (GAE, gathering minibatches,
metrics, checkpoints), and the simulator's own rate with random actions at the same size
(:func:`marlplug.bench.envs.time_steps`), so ``train/sim`` says how much of the simulator's speed
training keeps. ``speed-up`` is each row's frames/s over the first row of its sweep.
"""

from __future__ import annotations

import json
import tempfile
from importlib import resources
from typing import Any

import click
import torch

from marlplug.bench.envs import time_steps
from marlplug.config import load_config
from marlplug.envs.factory import make_env
from marlplug.runs.reporting import stderr_progress
from marlplug.train.run import run_training

#: The packaged fast-path config every point starts from.
CONFIG = "spread_vmas.yaml"
SCENARIO = "cooperative_navigation"


def train_point(
    *,
    num_envs: int,
    agents: int,
    updates: int,
    rollout_steps: int | None,
    minibatch: int | None,
    threads: int,
    seed: int = 0,
) -> dict[str, Any]:
    """Train the fast-path config at one size; frames/s and where the time went.

    ``rollout_steps`` and ``minibatch`` (``None``: the config's) override ``train.rollout_steps``
    and ``train.minibatch_size``.

    Examples:
        >>> row = train_point(num_envs=4, agents=2, updates=2, rollout_steps=5, minibatch=10,
        ...                   threads=1)
        >>> row["frames"], row["frames_per_update"]
        (40, 20)
    """
    path = str(resources.files("marlplug.configs").joinpath(CONFIG))
    with tempfile.TemporaryDirectory() as folder:
        overrides = [
            f"seed={seed}",
            f"env.agents={agents}",
            f"train.num_envs={num_envs}",
            f"train.updates={updates}",
            f"train.torch_threads={threads}",
            f"train.checkpoint_every={updates}",
            f"logging.dir={folder}",
            "logging.progress=false",
        ]
        if rollout_steps is not None:
            overrides.append(f"train.rollout_steps={rollout_steps}")
        if minibatch is not None:
            overrides.append(f"train.minibatch_size={minibatch}")
        config = load_config(path, overrides)
        result = run_training(config)
    frames_per_update = config.train.rollout_steps * num_envs
    collect = sum(it.collect_s for it in result.iterations)
    update = sum(it.update_s for it in result.iterations)
    seconds = result.seconds
    return {
        "agents": agents,
        "num_envs": num_envs,
        "rollout_steps": config.train.rollout_steps,
        "frames_per_update": frames_per_update,
        "frames": result.frames,
        "wall_s": round(seconds, 3),
        "fps": round(result.fps, 1),
        # Where the loop's time went: acting in the env, minibatch updates, and the rest (GAE,
        # minibatch gathering, metrics, checkpoints).
        "collect_share": round(collect / seconds, 3),
        "update_share": round(update / seconds, 3),
        "other_share": round(max(0.0, 1.0 - (collect + update) / seconds), 3),
    }


def simulator_rate(*, num_envs: int, agents: int, steps: int, threads: int) -> float:
    """Joint steps/s of the VMAS env alone (random actions, auto-resets) at this size."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        env = make_env(SCENARIO, backend="vmas", num_envs=num_envs, seed=0, agents=agents)
        with torch.no_grad():
            _, state = time_steps(env, env.reset(), 3)  # warm-up
            seconds, _ = time_steps(env, state, steps)
        env.close()
    finally:
        torch.set_num_threads(previous)
    return num_envs * steps / seconds


def run_scaling(
    *,
    num_envs: tuple[int, ...],
    agents: tuple[int, ...],
    base_agents: int,
    base_envs: int,
    updates: int,
    rollout_steps: int | None = None,
    minibatch: int | None = None,
    sim_steps: int = 50,
    threads: int = 1,
) -> list[dict[str, Any]]:
    """Both sweeps; one row per point, with ``sweep`` ("num_envs" or "agents") and the ratios.

    Examples:
        >>> rows = run_scaling(num_envs=(4, 8), agents=(2,), base_agents=2, base_envs=4,
        ...                    updates=2, rollout_steps=5, minibatch=20, sim_steps=2)
        >>> [(row["sweep"], row["num_envs"], row["agents"]) for row in rows]
        [('num_envs', 4, 2), ('num_envs', 8, 2), ('agents', 4, 2)]
        >>> rows[0]["speedup"]
        1.0
    """
    points = [("num_envs", envs, base_agents) for envs in num_envs] + [
        ("agents", base_envs, count) for count in agents
    ]
    rows: list[dict[str, Any]] = []
    with stderr_progress(len(points), label="bench scaling") as progress:
        for sweep, envs, count in points:
            progress.advance(f"{sweep}: M={count}, {envs} envs", steps=0)
            row = {
                "sweep": sweep,
                **train_point(
                    num_envs=envs,
                    agents=count,
                    updates=updates,
                    rollout_steps=rollout_steps,
                    minibatch=minibatch,
                    threads=threads,
                ),
            }
            sim = simulator_rate(num_envs=envs, agents=count, steps=sim_steps, threads=threads)
            row["sim_steps_per_s"] = round(sim, 1)
            row["train_over_sim"] = round(row["fps"] / sim, 3)
            first = next(r for r in [*rows, row] if r["sweep"] == sweep)
            row["speedup"] = round(row["fps"] / first["fps"], 2) if first["fps"] else None
            row["threads"] = threads
            rows.append(row)
            progress.advance()
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    """The human table: one line per point, sweeps in order."""
    lines = [
        f"{'sweep':<9}{'M':>4}{'num_envs':>10}{'frames/s':>11}{'collect':>9}{'update':>8}"
        f"{'other':>7}{'sim steps/s':>13}{'train/sim':>11}{'speed-up':>10}"
    ]
    for row in rows:
        lines.append(
            f"{row['sweep']:<9}{row['agents']:>4}{row['num_envs']:>10}{row['fps']:>11,.0f}"
            f"{row['collect_share']:>9.0%}{row['update_share']:>8.0%}{row['other_share']:>7.0%}"
            f"{row['sim_steps_per_s']:>13,.0f}{row['train_over_sim']:>11.2f}"
            f"{row['speedup']:>9.2f}x"
        )
    return "\n".join(lines)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list for tools.")
@click.option(
    "--num-envs",
    "num_envs",
    multiple=True,
    type=click.IntRange(min=1),
    default=(64, 256, 1024, 4096),
    show_default=True,
    help="Env copies of the first sweep (repeat the option).",
)
@click.option(
    "--agents",
    "agents",
    multiple=True,
    type=click.IntRange(min=2),
    default=(3, 8, 32),
    show_default=True,
    help="Numbers of agents M of the second sweep (repeat the option).",
)
@click.option(
    "--base-agents",
    default=3,
    show_default=True,
    type=click.IntRange(min=2),
    help="Agents during the num_envs sweep.",
)
@click.option(
    "--base-envs",
    default=256,
    show_default=True,
    type=click.IntRange(min=1),
    help="Env copies during the agents sweep.",
)
@click.option(
    "--updates",
    default=4,
    show_default=True,
    type=click.IntRange(min=2),
    help="Updates per point.",
)
@click.option(
    "--rollout-steps",
    type=click.IntRange(min=1),
    default=None,
    help="Steps per copy per update [default: the config's].",
)
@click.option(
    "--minibatch",
    type=click.IntRange(min=1),
    default=None,
    help="Rows per minibatch [default: the config's].",
)
@click.option(
    "--sim-steps",
    default=50,
    show_default=True,
    type=click.IntRange(min=1),
    help="Steps of the simulator-only measurement per point.",
)
@click.option(
    "--threads",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="torch intra-op threads.",
)
def scaling(
    as_json: bool,
    num_envs: tuple[int, ...],
    agents: tuple[int, ...],
    base_agents: int,
    base_envs: int,
    updates: int,
    rollout_steps: int | None,
    minibatch: int | None,
    sim_steps: int,
    threads: int,
) -> None:
    """Training frames/s on VMAS (the spread_vmas config) as env copies and agents grow."""
    rows = run_scaling(
        num_envs=num_envs,
        agents=agents,
        base_agents=base_agents,
        base_envs=base_envs,
        updates=updates,
        rollout_steps=rollout_steps,
        minibatch=minibatch,
        sim_steps=sim_steps,
        threads=threads,
    )
    click.echo(json.dumps(rows, indent=2) if as_json else format_table(rows))
