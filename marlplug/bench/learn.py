"""``marlplug bench learn``: does marlplug's default config learn as well as plain TorchRL MAPPO?

On cooperative navigation (mpe, N agents), each training seed trains every side on the same frame
budget, sides interleaved (the order rotates with the seed): marlplug's packaged default config
(``marlplug train``), and the plain TorchRL MAPPO pipeline (:mod:`marlplug.bench.torchrl_mappo`)
with the tutorial's settings and with tuned ones. Each trained policy is then evaluated on the same
fixed evaluation episodes (greedy actions), as are the random and scripted reference policies, so
every return is also an oracle-normalized score ``(R - random) / (scripted - random)``.
"""

from __future__ import annotations

import json
import math
import statistics
import tempfile
from dataclasses import asdict, dataclass, replace
from typing import Any

import click
import torch

from marlplug.bench.torchrl_mappo import PRESETS, train_torchrl_mappo
from marlplug.config import load_config
from marlplug.configs import default_config_path
from marlplug.envs import EvaluationResult, evaluate, make_env, normalized_score, reference_policy
from marlplug.envs.evaluate import evaluation_env
from marlplug.envs.policies import Policy
from marlplug.runs.checkpoint import load_policy
from marlplug.runs.reporting import stderr_progress
from marlplug.train.run import run_training

SCENARIO = "cooperative_navigation"
#: The sides, in the order the first seed runs them.
SIDES = ("marlplug", *(f"torchrl-{name}" for name in PRESETS))


@dataclass(frozen=True)
class Trained:
    """A trained policy and what its training cost."""

    policy: Policy
    frames: int
    wall_s: float


@dataclass(frozen=True)
class LearnRun:
    """One side trained with one seed and evaluated."""

    side: str
    seed: int
    frames: int
    wall_s: float
    fps: float
    final_return: float
    """Mean evaluation return (deterministic actions, summed over agents)."""
    return_std: float
    score: float
    """Oracle-normalized: (final_return - random) / (scripted - random)."""


def train_marlplug_default(frames: int, seed: int, *, agents: int, threads: int) -> Trained:
    """marlplug's packaged default config (what ``marlplug train`` runs) on ``frames`` frames.

    The one call into marlplug's orchestrator: ``train.updates`` is chosen for the budget (a budget
    below one rollout shortens the rollout), the run folder is temporary, and the policy is read
    back from the run's checkpoint.
    """
    default = str(default_config_path())  # what `marlplug train` runs without CONFIG
    with tempfile.TemporaryDirectory() as folder:
        overrides = [
            f"seed={seed}",
            f"env.agents={agents}",
            f"logging.dir={folder}",
            "logging.progress=false",
            f"train.torch_threads={threads}",
            # Every side is evaluated below on the same episodes; none spends its wall time on it.
            "train.eval_every=0",
        ]
        train = load_config(default, overrides).train
        rollout_steps = min(train.rollout_steps, max(1, frames // train.num_envs))
        updates = math.ceil(frames / (rollout_steps * train.num_envs))
        overrides += [f"train.rollout_steps={rollout_steps}", f"train.updates={updates}"]
        config = load_config(default, overrides)
        result = run_training(config)
        # The acting policy: the algorithm bound to the env, the checkpoint's theta rows loaded.
        policy = load_policy(result.checkpoint, evaluation_env(config), config)
    return Trained(policy=policy, frames=result.frames, wall_s=result.seconds)


def train_side(side: str, frames: int, seed: int, *, agents: int, threads: int) -> Trained:
    """Train ``side`` (one of :data:`SIDES`) with ``seed`` on ``frames`` frames."""
    if side == "marlplug":
        return train_marlplug_default(frames, seed, agents=agents, threads=threads)
    settings = replace(PRESETS[side.removeprefix("torchrl-")], agents=agents)
    trained = train_torchrl_mappo(settings, frames, seed)
    return Trained(policy=trained.policy, frames=trained.frames, wall_s=trained.wall_s)


def median_row(runs: list[LearnRun]) -> dict[str, float]:
    """Medians over seeds of every figure of one side."""
    figures = ("frames", "wall_s", "fps", "final_return", "score")
    return {name: statistics.median(getattr(run, name) for run in runs) for name in figures}


def run_bench(
    *,
    frames: int,
    seeds: list[int],
    sides: list[str],
    agents: int = 3,
    episodes: int = 100,
    eval_seed: int = 0,
    threads: int = 1,
) -> dict[str, Any]:
    """Train and evaluate every side for every seed; the report ``--json`` prints.

    Example (tiny budget: checks the machinery, not learning):
        >>> out = run_bench(frames=100, seeds=[0], sides=["torchrl-tuned"], episodes=1)
        >>> out["sides"]["torchrl-tuned"]["runs"][0]["frames"]
        100
    """
    torch.set_num_threads(threads)
    eval_env = make_env(SCENARIO, backend="mpe", agents=agents)

    def evaluated(policy: Policy) -> EvaluationResult:
        return evaluate(eval_env, policy, episodes=episodes, seed=eval_seed)

    runs: dict[str, list[LearnRun]] = {side: [] for side in sides}
    order: list[tuple[int, str]] = []
    with stderr_progress(len(seeds) * len(sides) + 1, label="bench learn") as progress:
        progress.advance("reference policies", steps=0)
        references = {
            name: evaluated(reference_policy(name, eval_env, scenario=SCENARIO)).mean
            for name in ("random", "scripted")
        }
        progress.advance()
        for index, seed in enumerate(seeds):
            shift = index % len(sides)
            for side in sides[shift:] + sides[:shift]:
                progress.advance(f"seed {seed}: {side}", steps=0)
                order.append((seed, side))
                trained = train_side(side, frames, seed, agents=agents, threads=threads)
                result = evaluated(trained.policy)
                runs[side].append(
                    LearnRun(
                        side=side,
                        seed=seed,
                        frames=trained.frames,
                        wall_s=trained.wall_s,
                        fps=trained.frames / trained.wall_s if trained.wall_s > 0 else math.nan,
                        final_return=result.mean,
                        return_std=result.std,
                        score=normalized_score(result.mean, **references),
                    )
                )
                progress.advance()
    return {
        "scenario": SCENARIO,
        "backend": "mpe",
        "agents": agents,
        "frames_budget": frames,
        "seeds": seeds,
        "eval_episodes": episodes,
        "eval_seed": eval_seed,
        "torch_threads": threads,
        "references": references,
        "order": order,
        "sides": {
            side: {"runs": [asdict(run) for run in side_runs], "median": median_row(side_runs)}
            for side, side_runs in runs.items()
        },
    }


def format_table(out: dict[str, Any]) -> str:
    """The human table: one row per side and seed, then the side's median."""
    lines = [
        f"{out['scenario']} (mpe, {out['agents']} agents), {out['frames_budget']} frames per run, "
        f"{out['eval_episodes']} evaluation episodes (greedy), torch threads {out['torch_threads']}",
        f"references: random {out['references']['random']:.1f}, "
        f"scripted {out['references']['scripted']:.1f}",
        "",
        f"{'side':<18}{'seed':>8}{'frames':>9}{'wall s':>9}{'frames/s':>10}{'return':>9}{'score':>8}",
    ]
    for side, report in out["sides"].items():
        rows = [(str(run["seed"]), run) for run in report["runs"]] + [("median", report["median"])]
        for seed, row in rows:
            lines.append(
                f"{side:<18}{seed:>8}{row['frames']:>9.0f}{row['wall_s']:>9.1f}{row['fps']:>10.0f}"
                f"{row['final_return']:>9.1f}{row['score']:>8.2f}"
            )
    return "\n".join(lines)


def _sides(_context: click.Context, _parameter: click.Parameter, value: str) -> list[str]:
    chosen = [side.strip() for side in value.split(",") if side.strip()]
    unknown = [side for side in chosen if side not in SIDES]
    if unknown or not chosen:
        raise click.BadParameter(
            f"unknown side {unknown[0]!r}; choose from: {', '.join(SIDES)}"
            if unknown
            else f"no side given; choose from: {', '.join(SIDES)}"
        )
    return list(dict.fromkeys(chosen))


def _seeds(_context: click.Context, _parameter: click.Parameter, value: str) -> list[int]:
    try:
        seeds = [int(seed) for seed in value.split(",") if seed.strip()]
    except ValueError:
        seeds = []
    if not seeds or any(seed < 0 for seed in seeds):
        raise click.BadParameter(f"{value!r}: expected seeds >= 0 separated by commas, e.g. 0,1,2")
    return list(dict.fromkeys(seeds))


@click.command()
@click.option(
    "--frames",
    type=click.IntRange(min=1),
    default=144_000,
    show_default=True,
    help="Frames (joint env steps) per training run.",
)
@click.option(
    "--seeds",
    default="0,1,2",
    show_default=True,
    callback=_seeds,
    help="Training seeds, comma-separated; every side trains once per seed.",
)
@click.option(
    "--sides",
    default=",".join(SIDES),
    show_default=True,
    callback=_sides,
    help="Which pipelines to train, comma-separated.",
)
@click.option("--agents", type=click.IntRange(min=1), default=3, show_default=True)
@click.option(
    "--episodes",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Evaluation episodes per trained policy (and per reference policy).",
)
@click.option(
    "--eval-seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the evaluation episodes, the same for every side.",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="torch threads, the same for every side.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def learn(
    frames: int,
    seeds: list[int],
    sides: list[str],
    agents: int,
    episodes: int,
    eval_seed: int,
    threads: int,
    as_json: bool,
) -> None:
    """marlplug's default config vs plain TorchRL MAPPO: evaluated return per frame budget and seed."""
    out = run_bench(
        frames=frames,
        seeds=seeds,
        sides=sides,
        agents=agents,
        episodes=episodes,
        eval_seed=eval_seed,
        threads=threads,
    )
    click.echo(json.dumps(out, indent=2) if as_json else format_table(out))
