"""``marlplug bench benchmarl``: marlplug's training frames/s beside BenchMARL 1.5.2's for the same
algorithm on the same VMAS task, with the same frames per iteration and optimizer steps per frame.

BenchMARL is an anchor, never a dependency: it trains in its own virtualenv (``--python``, made by
``bash scripts/anchors/setup_benchmarl.sh``), through ``scripts/anchors/benchmarl_vmas.py`` with
its ``matched`` preset, whose iteration shape is read off marlplug's config here
(:func:`matched_arguments`): PPO's rollout, minibatch and epochs for MAPPO and IPPO; for the
replay-based algorithms (MADDPG, IDDPG, MASAC, ISAC, IQL, VDN, QMIX) the steps collected between
two updates, one update each, and its minibatch. Both sides time each iteration after the first (which pays for start-up)
and report the median as frames/s; evaluations are left out on both.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

import click

from marlplug.config import MarlplugConfig, load_config
from marlplug.errors import UserError
from marlplug.runs.reporting import stderr_progress
from marlplug.train.run import run_training

#: BenchMARL's VMAS tasks -> the packaged config with BenchMARL's task settings.
TASK_CONFIGS = {"balance": "balance_vmas_benchmarl.yaml"}
#: BenchMARL's on-policy algorithms -> marlplug PPO's critic input.
PPO_CRITICS = {"mappo": "joint", "ippo": "local"}
#: BenchMARL's off-policy algorithms, each marlplug's algorithm of the same name; the Q-learners act
#: in discrete actions, the others in VMAS's continuous ones.
REPLAY_ALGORITHMS = ("maddpg", "iddpg", "masac", "isac", "iql", "vdn", "qmix")
DISCRETE = frozenset({"iql", "vdn", "qmix"})
#: A replay-based iteration: steps per copy and the update's minibatch (one update an iteration).
REPLAY_STEPS = 100
REPLAY_MINIBATCH = 1024
#: Where the anchor's runner lives in a marlplug checkout.
ANCHOR_SCRIPT = Path("scripts") / "anchors" / "benchmarl_vmas.py"


def anchor_script() -> Path:
    """The runner BenchMARL's Python executes (it is no part of the installed package).

    Raises:
        UserError: marlplug was not installed from a checkout that has the script.
    """
    path = Path(__file__).resolve().parents[2] / ANCHOR_SCRIPT
    if not path.is_file():
        raise UserError(
            f"bench benchmarl: {ANCHOR_SCRIPT} is not beside this marlplug; run it from a git "
            "checkout installed with `pip install -e .`"
        )
    return path


def benchmarl_version(python: Path) -> str:
    """BenchMARL's version as ``python`` imports it.

    Raises:
        UserError: ``python`` cannot import BenchMARL (one line, with how to make its venv).
    """
    try:
        probe = subprocess.run(
            [str(Path(python).absolute()), "-c", "import benchmarl; print(benchmarl.__version__)"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as error:  # not a file, not executable, not a program at all
        raise UserError(
            f"--python: {python} cannot be run ({error.strerror}); give the bin/python of the "
            "virtualenv `bash scripts/anchors/setup_benchmarl.sh` makes"
        ) from None
    if probe.returncode != 0:
        raise UserError(
            f"--python: {python} cannot import benchmarl; make its own virtualenv with "
            "`bash scripts/anchors/setup_benchmarl.sh` and give its bin/python"
        )
    return probe.stdout.strip()


def task_config(
    task: str, algorithm: str, *, iterations: int, threads: int, folder: str
) -> MarlplugConfig:
    """The packaged config of ``task`` set up as ``algorithm`` and for timing: ``iterations``
    updates, no evaluations, one checkpoint at the end, no progress bar.

    PPO (``mappo``, ``ippo``) trains the config as it is, with the critic the name says. A
    replay-based algorithm trains on the config's env and copies, :data:`REPLAY_STEPS` steps per
    copy and one update of :data:`REPLAY_MINIBATCH` an iteration, learning from the first (its other
    options are its defaults: the config's are PPO's).
    """
    path = str(resources.files("marlplug.configs").joinpath(TASK_CONFIGS[task]))
    timing = [
        f"train.updates={iterations}",
        "train.eval_every=0",
        f"train.checkpoint_every={iterations}",
        f"logging.dir={folder}",
        "logging.progress=false",
    ]
    if algorithm in PPO_CRITICS:
        return load_config(
            path,
            [
                f"algorithm.critic={PPO_CRITICS[algorithm]}",
                f"train.torch_threads={threads}",
                *timing,
            ],
        )
    base = load_config(path)
    frames = REPLAY_STEPS * base.train.num_envs
    env = base.env.model_dump()
    env["continuous_actions"] = algorithm not in DISCRETE
    return load_config(
        data={
            "seed": base.seed,
            "env": env,
            "algorithm": {
                "name": algorithm,
                "episode_length": env["max_steps"],
                "steps_per_iteration": REPLAY_STEPS,
                "minibatch_size": REPLAY_MINIBATCH,
                "learning_starts": frames,
                "buffer_size": iterations * frames,
            },
            "train": {"num_envs": base.train.num_envs},
        },
        overrides=timing,
    )


def matched_arguments(config: MarlplugConfig) -> list[str]:
    """BenchMARL's ``matched`` preset with ``config``'s iteration shape: the frames an iteration
    collects, the env copies, the minibatch size and the optimizer steps of one iteration.

    Examples:
        >>> from marlplug import load_config
        >>> config = load_config(data={"train": {"num_envs": 60, "rollout_steps": 100,
        ...     "minibatch_size": 600, "n_epochs": 4, "iterate_all_minibatches": True}})
        >>> matched_arguments(config)
        ['--preset', 'matched', '--frames-per-batch', '6000', '--n-envs', '60', '--minibatch-size', '600', '--minibatch-iters', '40']
        >>> config = task_config("balance", "iql", iterations=2, threads=1, folder="runs")
        >>> matched_arguments(config)
        ['--preset', 'matched', '--frames-per-batch', '6000', '--n-envs', '60', '--minibatch-size', '1024', '--minibatch-iters', '1']
    """
    train = config.train
    options = config.algorithm.options
    if config.algorithm.name in REPLAY_ALGORITHMS:
        frames = options.steps_per_iteration * train.num_envs  # type: ignore[attr-defined]
        batch = options.minibatch_size  # type: ignore[attr-defined]
        return [
            *("--preset", "matched", "--frames-per-batch", str(frames)),
            *("--n-envs", str(train.num_envs), "--minibatch-size", str(batch)),
            *("--minibatch-iters", "1"),
        ]
    frames = train.num_envs * train.rollout_steps
    if not train.iterate_all_minibatches or frames % train.minibatch_size:
        raise UserError(
            "bench benchmarl: the config must iterate over all minibatches of equal size "
            "(train.iterate_all_minibatches: true, a minibatch size that divides the rollout)"
        )
    steps = train.n_epochs * frames // train.minibatch_size
    return [
        "--preset",
        "matched",
        "--frames-per-batch",
        str(frames),
        "--n-envs",
        str(train.num_envs),
        "--minibatch-size",
        str(train.minibatch_size),
        "--minibatch-iters",
        str(steps),
    ]


def frames_per_iteration(config: MarlplugConfig) -> int:
    """Frames (joint env steps) one iteration collects."""
    if config.algorithm.name in REPLAY_ALGORITHMS:
        steps: int = config.algorithm.options.steps_per_iteration  # type: ignore[attr-defined]
        return steps * config.train.num_envs
    return config.train.num_envs * config.train.rollout_steps


def marlplug_fps(config: MarlplugConfig) -> float:
    """marlplug's frames/s: the median iteration after the first, collection and update."""
    result = run_training(config)
    frames = result.frames // len(result.iterations)
    timed = result.iterations[1:] or result.iterations
    return frames / statistics.median(it.collect_s + it.update_s for it in timed)


def benchmarl_fps(
    python: Path, config: MarlplugConfig, *, task: str, algorithm: str, threads: int, folder: str
) -> dict[str, Any]:
    """BenchMARL's run with the same shape: its frames/s, and what it says about itself."""
    out = Path(folder) / f"benchmarl-{algorithm}.json"
    frames = config.train.updates * frames_per_iteration(config)
    command = [
        str(python),
        str(anchor_script()),
        "--task",
        task,
        "--algorithm",
        algorithm,
        "--frames",
        str(frames),
        "--threads",
        str(threads),
        # The runner evaluates after the first iteration and at its last; keep that short.
        "--evaluation-interval",
        str(frames),
        "--evaluation-episodes",
        "2",
        "--out",
        str(out),
        *matched_arguments(config),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise click.ClickException(f"BenchMARL's run failed: {tail[0]}")
    return dict(json.loads(out.read_text()))


def run_pairs(
    python: Path,
    *,
    task: str,
    algorithms: tuple[str, ...],
    iterations: int,
    threads: int,
    trials: int,
) -> list[dict[str, Any]]:
    """For each algorithm, ``trials`` pairs of runs (marlplug, then BenchMARL); median frames/s."""
    rows = []
    with stderr_progress(len(algorithms) * trials * 2, label="bench benchmarl") as progress:
        for algorithm in algorithms:
            ours: list[float] = []
            theirs: list[float] = []
            anchor = ""
            for _ in range(trials):
                with tempfile.TemporaryDirectory() as folder:
                    config = task_config(
                        task, algorithm, iterations=iterations, threads=threads, folder=folder
                    )
                    ours.append(marlplug_fps(config))
                    progress.advance()
                    result = benchmarl_fps(
                        python,
                        config,
                        task=task,
                        algorithm=algorithm,
                        threads=threads,
                        folder=folder,
                    )
                    theirs.append(float(result["frames_per_s_median"]))
                    anchor = str(result["anchor"])
                    progress.advance()
            marlplug = statistics.median(ours)
            benchmarl = statistics.median(theirs)
            rows.append(
                {
                    "task": task,
                    "algorithm": algorithm,
                    "frames_per_iteration": frames_per_iteration(config),
                    "iterations": iterations,
                    "threads": threads,
                    "trials": trials,
                    "marlplug_fps": round(marlplug, 1),
                    "benchmarl_fps": round(benchmarl, 1),
                    "ratio": round(marlplug / benchmarl, 2),
                    "anchor": anchor,
                }
            )
    return rows


def format_rows(rows: list[dict[str, Any]]) -> str:
    """The side-by-side table.

    Examples:
        >>> print(format_rows([{"task": "balance", "algorithm": "mappo", "marlplug_fps": 3000.0,
        ...     "benchmarl_fps": 500.0, "ratio": 6.0, "frames_per_iteration": 6000}]))
        task     algorithm  frames/iteration  marlplug frames/s  BenchMARL frames/s  ratio
        balance  mappo                  6000               3000                 500   6.00x
    """
    lines = [
        f"{'task':<8} {'algorithm':<10} {'frames/iteration':>16}  {'marlplug frames/s':>17}  "
        f"{'BenchMARL frames/s':>18}  {'ratio':>5}"
    ]
    for row in rows:
        lines.append(
            f"{row['task']:<8} {row['algorithm']:<10} {row['frames_per_iteration']:>16}  "
            f"{row['marlplug_fps']:>17.0f}  {row['benchmarl_fps']:>18.0f}  {row['ratio']:>5.2f}x"
        )
    return "\n".join(lines)


@click.command()
@click.option(
    "--python",
    "python",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="The Python of BenchMARL's own virtualenv (bash scripts/anchors/setup_benchmarl.sh).",
)
@click.option(
    "--task", type=click.Choice(sorted(TASK_CONFIGS)), default="balance", show_default=True
)
@click.option(
    "--algorithm",
    "algorithms",
    type=click.Choice([*PPO_CRITICS, *REPLAY_ALGORITHMS]),
    multiple=True,
    default=("mappo", "ippo"),
    show_default=True,
    help="BenchMARL's algorithm and marlplug's same one (mappo, ippo: PPO with a joint or local "
    "critic); repeatable.",
)
@click.option("--iterations", type=click.IntRange(min=2), default=4, show_default=True)
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--trials", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def benchmarl(
    python: Path,
    task: str,
    algorithms: tuple[str, ...],
    iterations: int,
    threads: int,
    trials: int,
    as_json: bool,
) -> None:
    """marlplug vs BenchMARL 1.5.2 (its own venv): training frames/s, same task and iteration shape.

    \b
    Examples:
        bash scripts/anchors/setup_benchmarl.sh /work/anchors/benchmarl
        marlplug bench benchmarl --python /work/anchors/benchmarl/bin/python
        marlplug bench benchmarl --python /work/anchors/benchmarl/bin/python --algorithm mappo --trials 3 --json
    """
    benchmarl_version(python)
    anchor_script()
    rows = run_pairs(
        python,
        task=task,
        algorithms=algorithms,
        iterations=iterations,
        threads=threads,
        trials=trials,
    )
    click.echo(json.dumps(rows, indent=2) if as_json else format_rows(rows))
