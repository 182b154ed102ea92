"""``marlplug bench benchmarl``: marlplug's training frames/s beside BenchMARL 1.5.2's for the same
algorithm on the same VMAS task, with the same frames per iteration and optimizer steps per frame.

BenchMARL is an anchor, never a dependency: it trains in its own virtualenv (``--python``, made by
``bash scripts/anchors/setup_benchmarl.sh``), through ``scripts/anchors/benchmarl_vmas.py`` with
its ``matched`` preset, whose iteration shape is read off marlplug's config
(:mod:`marlplug.bench.benchmarl_shape`): PPO's rollout, minibatch and epochs for MAPPO and IPPO; for the
replay-based algorithms (MADDPG, IDDPG, MASAC, ISAC, IQL, VDN, QMIX) the frames an iteration
collects, the updates after it (marlplug's ``algorithm.updates_per_iteration``, BenchMARL's
``off_policy_n_optimizer_steps``) and their minibatch (``algorithm.minibatch_size``,
``off_policy_train_batch_size``): by default one update of 1,024 per 6,000 frames;
``--updates-per-iteration 1000 --replay-minibatch 128`` is BenchMARL's own fine-tuned VMAS shape.
Both sides' networks have BenchMARL's hidden layers, two of 256 (the runner reports its own, and
the bench checks them). Both sides time each iteration after the first (which pays for start-up)
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

from marlplug.bench.benchmarl_shape import (
    BENCHMARL_HIDDEN,
    REPLAY_ALGORITHMS,
    check_benchmarl_shape,
    frames_per_iteration,
    hidden_widths,
    iteration_shape,
    matched_arguments,
)
from marlplug.config import MarlplugConfig, load_config
from marlplug.errors import UserError
from marlplug.runs.reporting import stderr_progress
from marlplug.train.run import run_training

#: BenchMARL's VMAS tasks -> the packaged config with BenchMARL's task settings.
TASK_CONFIGS = {
    "balance": "balance_vmas_benchmarl.yaml",
    "navigation": "navigation_vmas_benchmarl.yaml",
    "sampling": "sampling_vmas_benchmarl.yaml",
}
#: BenchMARL's on-policy algorithms -> marlplug PPO's critic input.
PPO_CRITICS = {"mappo": "joint", "ippo": "local"}
#: The replay-based algorithms (:data:`REPLAY_ALGORITHMS`) that act in discrete actions: the
#: Q-learners; the others act in VMAS's continuous ones.
DISCRETE = frozenset({"iql", "vdn", "qmix"})
#: A replay-based iteration: steps per copy (6,000 frames from the task config's 60 copies), and
#: by default one update of 1,024 transitions after it.
REPLAY_STEPS = 100
REPLAY_UPDATES = 1
REPLAY_MINIBATCH = 1024
#: BenchMARL's fine-tuned VMAS off-policy shape (its ``fine_tuned/vmas/conf/config.yaml``): 6,000
#: frames an iteration, then ``off_policy_n_optimizer_steps`` updates of
#: ``off_policy_train_batch_size`` transitions.
BENCHMARL_UPDATES = 1000
BENCHMARL_MINIBATCH = 128
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
    task: str,
    algorithm: str,
    *,
    iterations: int,
    threads: int,
    folder: str,
    updates_per_iteration: int = REPLAY_UPDATES,
    replay_minibatch: int = REPLAY_MINIBATCH,
) -> MarlplugConfig:
    """The packaged config of ``task`` set up as ``algorithm`` and for timing: ``iterations``
    iterations, no evaluations, one checkpoint at the end, no progress bar.

    PPO (``mappo``, ``ippo``) trains the config as it is, with the critic the name says. A
    replay-based algorithm trains on the config's env and copies, :data:`REPLAY_STEPS` steps per
    copy, then ``updates_per_iteration`` updates of ``replay_minibatch`` transitions, learning from
    the first iteration on (its other options are its defaults: the config's are PPO's). Either
    way the networks have BenchMARL's hidden layers (:data:`BENCHMARL_HIDDEN`), so both sides
    compute the same sizes.
    """
    path = str(resources.files("marlplug.configs").joinpath(TASK_CONFIGS[task]))
    timing = [
        f"train.updates={iterations}",
        "train.eval_every=0",
        f"train.checkpoint_every={iterations}",
        f"logging.dir={folder}",
        "logging.progress=false",
    ]
    first, second = BENCHMARL_HIDDEN
    if algorithm in PPO_CRITICS:
        return load_config(
            path,
            [
                f"algorithm.critic={PPO_CRITICS[algorithm]}",
                # BenchMARL's MLP: the encoder's two layers, the critic's two, tanh.
                f"algorithm.hidden_size={first}",
                f"algorithm.feature_dim={second}",
                "algorithm.activation=tanh",
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
                "updates_per_iteration": updates_per_iteration,
                "minibatch_size": replay_minibatch,
                "learning_starts": frames,
                "buffer_size": iterations * frames,
                "hidden_sizes": list(BENCHMARL_HIDDEN),  # ReLU: marlplug's only choice here
            },
            "train": {"num_envs": base.train.num_envs},
        },
        overrides=timing,
    )


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
    updates_per_iteration: int = REPLAY_UPDATES,
    replay_minibatch: int = REPLAY_MINIBATCH,
) -> list[dict[str, Any]]:
    """For each algorithm, ``trials`` pairs of runs (marlplug, then BenchMARL); median frames/s.
    Each row states the iteration shape both sides ran (:func:`iteration_shape`)."""
    rows = []
    with stderr_progress(len(algorithms) * trials * 2, label="bench benchmarl") as progress:
        for algorithm in algorithms:
            ours: list[float] = []
            theirs: list[float] = []
            anchor = ""
            for _ in range(trials):
                with tempfile.TemporaryDirectory() as folder:
                    config = task_config(
                        task,
                        algorithm,
                        iterations=iterations,
                        threads=threads,
                        folder=folder,
                        updates_per_iteration=updates_per_iteration,
                        replay_minibatch=replay_minibatch,
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
                    check_benchmarl_shape(result, config)
                    theirs.append(float(result["frames_per_s_median"]))
                    anchor = str(result["anchor"])
                    progress.advance()
            marlplug = statistics.median(ours)
            benchmarl = statistics.median(theirs)
            rows.append(
                {
                    "task": task,
                    "algorithm": algorithm,
                    **iteration_shape(config),
                    "hidden": hidden_widths(config),
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
    """The side-by-side table; ``updates`` and ``minibatch`` are the optimizer steps after each
    iteration's frames and their size, ``hidden`` the networks' hidden layers, the same on both
    sides.

    Examples:
        >>> print(format_rows([{"task": "balance", "algorithm": "iql", "marlplug_fps": 3000.0,
        ...     "benchmarl_fps": 500.0, "ratio": 6.0, "frames_per_iteration": 6000,
        ...     "updates_per_iteration": 1000, "minibatch_size": 128, "hidden": [256, 256]}]))
        task     algorithm  frames/iteration  updates  minibatch   hidden  marlplug frames/s  BenchMARL frames/s  ratio
        balance  iql                    6000     1000        128  256x256               3000                 500   6.00x
    """
    lines = [
        f"{'task':<8} {'algorithm':<10} {'frames/iteration':>16}  {'updates':>7}  "
        f"{'minibatch':>9}  {'hidden':>7}  {'marlplug frames/s':>17}  {'BenchMARL frames/s':>18}  "
        f"{'ratio':>5}"
    ]
    for row in rows:
        hidden = "x".join(str(width) for width in row["hidden"])
        lines.append(
            f"{row['task']:<8} {row['algorithm']:<10} {row['frames_per_iteration']:>16}  "
            f"{row['updates_per_iteration']:>7}  {row['minibatch_size']:>9}  {hidden:>7}  "
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
@click.option(
    "--updates-per-iteration",
    type=click.IntRange(min=1, max=10**6),
    default=REPLAY_UPDATES,
    show_default=True,
    help="Replay-based algorithms: optimizer steps after each iteration's frames, on both sides "
    "(marlplug's algorithm.updates_per_iteration, BenchMARL's off_policy_n_optimizer_steps). "
    f"BenchMARL's fine-tuned VMAS shape: {BENCHMARL_UPDATES} with --replay-minibatch "
    f"{BENCHMARL_MINIBATCH}. MAPPO and IPPO keep their config's epochs.",
)
@click.option(
    "--replay-minibatch",
    type=click.IntRange(min=1, max=10**7),
    default=REPLAY_MINIBATCH,
    show_default=True,
    help="Replay-based algorithms: transitions per update, on both sides (algorithm."
    "minibatch_size; BenchMARL's off_policy_train_batch_size).",
)
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--trials", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def benchmarl(
    python: Path,
    task: str,
    algorithms: tuple[str, ...],
    iterations: int,
    updates_per_iteration: int,
    replay_minibatch: int,
    threads: int,
    trials: int,
    as_json: bool,
) -> None:
    """marlplug vs BenchMARL 1.5.2 (its own venv): training frames/s, same task and iteration shape.

    Every row states the shape both sides ran: frames an iteration collects, then the optimizer
    steps (updates) on minibatches of its size. MAPPO and IPPO: the task config's rollout and
    epochs. Replay-based algorithms: 6,000 frames (60 copies x 100 steps), then
    --updates-per-iteration updates of --replay-minibatch (default 1 of 1,024; BenchMARL's
    fine-tuned VMAS config: 1,000 of 128). Both sides' networks: BenchMARL's two hidden layers
    of 256.

    \b
    Examples:
        bash scripts/anchors/setup_benchmarl.sh /work/anchors/benchmarl
        marlplug bench benchmarl --python /work/anchors/benchmarl/bin/python
        marlplug bench benchmarl --python /work/anchors/benchmarl/bin/python --algorithm mappo --trials 3 --json
        marlplug bench benchmarl --python /work/anchors/benchmarl/bin/python --algorithm iql --updates-per-iteration 1000 --replay-minibatch 128
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
        updates_per_iteration=updates_per_iteration,
        replay_minibatch=replay_minibatch,
    )
    click.echo(json.dumps(rows, indent=2) if as_json else format_rows(rows))
