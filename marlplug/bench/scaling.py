"""``marlplug bench scaling``: end-to-end training frames/s on VMAS as env copies and agents grow.

Each point is a real ``marlplug train`` run of a packaged config on cooperative navigation (VMAS),
with ``train.num_envs`` and ``env.agents`` changed, a few iterations long, in a temporary run folder
(checkpoints and CSV metrics included; no periodic evaluations, which frames/s leaves out anyway).
Two sweeps: copies at a fixed number of agents, then agents at a fixed number of copies.

``--algorithm ppo`` (the default) trains ``marlplug/configs/spread_vmas.yaml``, the fast path. The
agents sweep runs once per ``--critic`` (``algorithm.critic``: ``joint``, each agent's critic reads
every agent's observation; ``state``, the env's compact global state; ``local``, its own
observation, IPPO), the rows of one M side by side; the num_envs sweep runs with the first critic.
A critic named with ``+shared`` (``state+shared``) trains with ``algorithm.share_params``: one
policy and one critic shared by the agents, so a state or joint critic, whose input every agent
shares, runs once per frame instead of once per agent.

``--algorithm NAME`` measures any registered algorithm (``marlplug plugins``): ``maddpg`` trains
``marlplug/configs/maddpg_spread.yaml`` on VMAS (its critics read every agent's observation and
action: ``critic`` is ``joint``), and every other replay-based algorithm (``iddpg``, ``iql``,
``vdn``, ``qmix``, ``isac``, ``masac``) the same config with ``algorithm.name`` set, so its own
defaults (networks, learning rate) apply; the Q-learners act on VMAS's discrete moves. An iteration
takes ``algorithm.steps_per_iteration`` steps in each copy, then makes
``algorithm.updates_per_iteration`` updates (1 in the packaged config; ``--set`` changes it) of
``algorithm.minibatch_size`` transitions each: the steps are ``--rollout-steps``, raised where needed so
that one iteration collects at least one minibatch (default: just that, at least one step per copy),
and learning starts after the first iteration's collection (``algorithm.learning_starts``), so every
timed iteration learns. The replay buffer holds the whole run. Replay-based algorithms act and learn
on one thread. The ``critic`` column is the algorithm's ``critic`` option (``-`` where it has none).

Each row reports the run's frames/s as the trainer counts it (env steps x copies over the training
loop's wall time, the first iteration's warm-up included: give more ``--updates`` to dilute it),
agent-steps/s (frames/s x M: every frame is one step of all M agents), the shares of that time spent
collecting, in updates and elsewhere (PPO: GAE, gathering minibatches; metrics, checkpoints), and
the simulator's own rate with random actions at the same size
(:func:`marlplug.bench.env_steps.simulator_rate`, the median of five timings, once per size),
so ``train/sim`` says how much of the simulator's speed training keeps. ``speed-up`` is each row's
frames/s over the first row of its sweep with the same critic.

Examples:
    marlplug bench scaling
    marlplug bench scaling --critic joint --critic state --critic local --num-envs 256
    marlplug bench scaling --critic state --critic state+shared --agents 8 --agents 32
    marlplug bench scaling --algorithm maddpg --json
    marlplug bench scaling --algorithm qmix --num-envs 256 --agents 3 --agents 8 --agents 32
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from typing import Any, cast

import click

from marlplug.algorithms.replay import ReplayOptions
from marlplug.bench.env_steps import SIM_REPEATS, simulator_rate
from marlplug.bench.scaling_config import (
    BENCH_KEYS,
    CRITICS,
    SCENARIO,
    config_path,
    learns_from_replay,
    ppo_overrides,
    replay_overrides,
)
from marlplug.config import load_config
from marlplug.plugins import get_plugin_manager
from marlplug.runs.reporting import stderr_progress
from marlplug.train.run import run_training


def train_point(
    *,
    num_envs: int,
    agents: int,
    updates: int,
    rollout_steps: int | None,
    minibatch: int | None,
    threads: int,
    algorithm: str = "ppo",
    critic: str = "joint",
    seed: int = 0,
    sets: Sequence[str] = (),
) -> dict[str, Any]:
    """Train ``algorithm``'s packaged config at one size; frames/s and where the time went.

    ``rollout_steps`` and ``minibatch`` (``None``: the config's) are PPO's ``train.rollout_steps``
    and ``train.minibatch_size``, a replay-based algorithm's steps per copy per iteration (see
    :func:`replay_overrides`) and ``algorithm.minibatch_size``; ``critic`` is PPO's
    ``algorithm.critic`` (the others train with their config's, which the row names). ``rollout_steps`` in the row is the steps per copy per iteration.
    ``sets`` are the user's ``KEY=VALUE`` overrides, applied last.

    Examples:
        >>> row = train_point(num_envs=4, agents=2, updates=2, rollout_steps=5, minibatch=10,
        ...                   threads=1, critic="local")
        >>> row["critic"], row["frames"], row["frames_per_update"]
        ('local', 40, 20)
        >>> row["agent_steps_per_s"] == round(2 * row["fps"], 1)
        True
    """
    path = config_path(algorithm)
    named = [f"algorithm.name={algorithm}"]
    options = load_config(path, named).algorithm.options
    if learns_from_replay(type(options)):
        extra = replay_overrides(
            num_envs=num_envs,
            updates=updates,
            rollout_steps=rollout_steps,
            minibatch=minibatch or cast(ReplayOptions, options).minibatch_size,
        )
        critic = getattr(options, "critic", "-")
    else:
        extra = ppo_overrides(
            critic=critic, rollout_steps=rollout_steps, minibatch=minibatch, threads=threads
        )
    with tempfile.TemporaryDirectory() as folder:
        overrides = [
            f"seed={seed}",
            "env.backend=vmas",
            f"env.agents={agents}",
            f"train.num_envs={num_envs}",
            f"train.updates={updates}",
            f"train.checkpoint_every={updates}",
            # Evaluations are left out of frames/s: skip them.
            "train.eval_every=0",
            f"logging.dir={folder}",
            "logging.progress=false",
            *named,
            *extra,
            *sets,
        ]
        result = run_training(load_config(path, overrides))
    frames_per_update = result.frames // len(result.iterations)
    collect = sum(it.collect_s for it in result.iterations)
    update = sum(it.update_s for it in result.iterations)
    seconds = result.seconds
    fps = round(result.fps, 1)
    return {
        "algorithm": algorithm,
        "critic": critic,
        "agents": agents,
        "num_envs": num_envs,
        "rollout_steps": frames_per_update // num_envs,
        "frames_per_update": frames_per_update,
        "frames": result.frames,
        "wall_s": round(seconds, 3),
        "fps": fps,
        # Every frame is one step of all M agents.
        "agent_steps_per_s": round(fps * agents, 1),
        # Where the loop's time went: acting in the env, updates, and the rest (PPO: GAE,
        # minibatch gathering; metrics, checkpoints).
        "collect_share": round(collect / seconds, 3),
        "update_share": round(update / seconds, 3),
        "other_share": round(max(0.0, 1.0 - (collect + update) / seconds), 3),
    }


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
    algorithm: str = "ppo",
    critics: tuple[str, ...] = ("joint",),
    sets: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Both sweeps; one row per point, with ``sweep`` ("num_envs" or "agents") and the ratios.

    The num_envs sweep trains with ``critics[0]``, the agents sweep with each critic in turn at each
    number of agents; ``sets`` (``KEY=VALUE``) change the config of every point.

    Examples:
        >>> rows = run_scaling(num_envs=(4, 8), agents=(2,), base_agents=2, base_envs=4,
        ...                    updates=2, rollout_steps=5, minibatch=20, sim_steps=2,
        ...                    critics=("joint", "local"))
        >>> [(row["sweep"], row["critic"], row["num_envs"], row["agents"]) for row in rows]
        ... # doctest: +NORMALIZE_WHITESPACE
        [('num_envs', 'joint', 4, 2), ('num_envs', 'joint', 8, 2), ('agents', 'joint', 4, 2),
         ('agents', 'local', 4, 2)]
        >>> [row["speedup"] for row in rows if row["num_envs"] == 4]
        [1.0, 1.0, 1.0]
    """
    points = [("num_envs", critics[0], envs, base_agents) for envs in num_envs] + [
        ("agents", critic, base_envs, count) for count in agents for critic in critics
    ]
    sims: dict[tuple[int, int], float] = {}
    rows: list[dict[str, Any]] = []
    with stderr_progress(len(points), label="bench scaling") as progress:
        for sweep, critic, envs, count in points:
            progress.advance(f"{sweep}: {critic} critic, M={count}, {envs} envs", steps=0)
            row = {
                "sweep": sweep,
                **train_point(
                    num_envs=envs,
                    agents=count,
                    updates=updates,
                    rollout_steps=rollout_steps,
                    minibatch=minibatch,
                    threads=threads,
                    algorithm=algorithm,
                    critic=critic,
                    sets=sets,
                ),
            }
            if (envs, count) not in sims:
                sims[envs, count] = simulator_rate(
                    SCENARIO, num_envs=envs, agents=count, steps=sim_steps, threads=threads
                )
            row["sim_steps_per_s"] = round(sims[envs, count], 1)
            row["train_over_sim"] = round(row["fps"] / sims[envs, count], 3)
            same = (sweep, row["critic"])
            first = next(r for r in [*rows, row] if (r["sweep"], r["critic"]) == same)
            row["speedup"] = round(row["fps"] / first["fps"], 2) if first["fps"] else None
            row["threads"] = threads
            row["sets"] = list(sets)
            rows.append(row)
            progress.advance()
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    """The human table: one line per point, sweeps in order."""
    lines = [
        f"{'sweep':<9}{'critic':<14}{'M':>4}{'num_envs':>10}{'frames/s':>11}{'agent-steps/s':>15}"
        f"{'collect':>9}{'update':>8}{'other':>7}{'sim steps/s':>13}{'train/sim':>11}"
        f"{'speed-up':>10}"
    ]
    for row in rows:
        lines.append(
            f"{row['sweep']:<9}{row['critic']:<14}{row['agents']:>4}{row['num_envs']:>10}"
            f"{row['fps']:>11,.0f}{row['agent_steps_per_s']:>15,.0f}"
            f"{row['collect_share']:>9.0%}{row['update_share']:>8.0%}{row['other_share']:>7.0%}"
            f"{row['sim_steps_per_s']:>13,.0f}{row['train_over_sim']:>11.2f}"
            f"{row['speedup']:>9.2f}x"
        )
    return "\n".join(lines)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list for tools.")
@click.option(
    "--algorithm",
    default="ppo",
    show_default=True,
    help="Any registered algorithm (marlplug plugins lists them): ppo trains spread_vmas.yaml, "
    "the replay-based ones (maddpg, iql, vdn, qmix, ...) maddpg_spread.yaml with algorithm.name "
    "set, on VMAS.",
)
@click.option(
    "--critic",
    "critics",
    multiple=True,
    type=click.Choice(CRITICS),
    default=("joint",),
    show_default=True,
    help="PPO's algorithm.critic: the agents sweep runs once per critic, the num_envs sweep with "
    "the first (repeat the option; other algorithms: joint, which trains with their own). With +shared (state+shared): and "
    "algorithm.share_params, one policy and one critic shared by the agents.",
)
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
    default=(3, 8, 16, 32, 64),
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
    help="Updates (iterations) per point.",
)
@click.option(
    "--rollout-steps",
    type=click.IntRange(min=1),
    default=None,
    help="Steps per copy per update [default: the config's]; replay-based algorithms: per "
    "iteration, raised where "
    "needed to one minibatch's worth [default: that].",
)
@click.option(
    "--minibatch",
    type=click.IntRange(min=1),
    default=None,
    help="Rows per minibatch (replay-based algorithms: transitions per update) [default: the "
    "config's].",
)
@click.option(
    "--sim-steps",
    default=50,
    show_default=True,
    type=click.IntRange(min=1),
    help=f"Steps of each of the {SIM_REPEATS} timings of the simulator alone per size (their median).",
)
@click.option(
    "--threads",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="torch intra-op threads (replay-based algorithms: 1, as they train on one thread).",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Change the packaged config at every point, e.g. --set env.entity_order=world or --set "
    "algorithm.activation=relu (YAML values; repeatable; applied after the bench's own settings).",
)
def scaling(
    as_json: bool,
    algorithm: str,
    critics: tuple[str, ...],
    num_envs: tuple[int, ...],
    agents: tuple[int, ...],
    base_agents: int,
    base_envs: int,
    updates: int,
    rollout_steps: int | None,
    minibatch: int | None,
    sim_steps: int,
    threads: int,
    sets: tuple[str, ...],
) -> None:
    """Training frames/s on VMAS as env copies and agents grow, for any algorithm (--algorithm).

    Each point is a real training run of a packaged config: frames/s, agent-steps/s (frames/s x M),
    the shares of collection, updates and the rest, and the simulator's own rate at that size.
    With several --critic, each M of the agents sweep gets one row per critic.

    \b
    Examples:
        marlplug bench scaling
        marlplug bench scaling --critic joint --critic state --critic local --num-envs 256
        marlplug bench scaling --algorithm maddpg --json
        marlplug bench scaling --algorithm qmix --num-envs 256 --agents 3 --agents 8 --agents 32
        marlplug bench scaling --agents 32 --set env.entity_order=world
    """
    registry = get_plugin_manager().registry("algorithm")
    if algorithm not in registry:
        raise click.UsageError(str(registry.unknown(algorithm, field="--algorithm")))
    if algorithm != "ppo" and set(critics) != {"joint"}:
        raise click.UsageError(
            f"--critic: {algorithm} trains with its config's critic; state, local and +shared "
            "are ppo's (--algorithm ppo)"
        )
    if learns_from_replay(registry[algorithm].Options) and threads != 1:
        raise click.UsageError(
            f"--threads: {algorithm} acts and learns on one thread; give --threads 1"
        )
    for assignment in sets:
        key = assignment.partition("=")[0].strip()
        if key in BENCH_KEYS:
            raise click.UsageError(
                f"--set {key}: the bench sets it at every point; use {BENCH_KEYS[key]}"
            )
    # A bad --set fails here, in one line, not after the points before it have trained.
    load_config(config_path(algorithm), [f"algorithm.name={algorithm}", *sets])
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
        algorithm=algorithm,
        critics=critics,
        sets=sets,
    )
    click.echo(json.dumps(rows, indent=2) if as_json else format_table(rows))
