"""``marlplug sweep [CONFIG] --seeds 0-4 [--set k=v ...] [--grid k=v1,v2 ...] [--jobs N]``: train
every configuration of a grid with every seed, evaluate each final policy, write one results file
for ``marlplug compare``."""

from __future__ import annotations

import os
from pathlib import Path

import click

from marlplug.configs import default_config_path
from marlplug.errors import UserError
from marlplug.experiments.plan import GridAxis, PlannedRun, parse_seeds, plan_runs
from marlplug.experiments.results import Machine, SweepResults, load_results
from marlplug.plugins import get_plugin_manager


@click.command()
@click.argument("config_path", metavar="[CONFIG]", required=False, type=click.Path(path_type=Path))
@click.option(
    "--seeds",
    default="0-4",
    show_default=True,
    help="Seeds to train each configuration with: 0-4, 0,2,5 or 0-2,7.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config value in every run, e.g. --set train.updates=10 (repeatable).",
)
@click.option(
    "--grid",
    "grid",
    multiple=True,
    metavar="KEY=V1,V2",
    help="Train every value of KEY (repeatable: every combination). Values are YAML; commas "
    "inside [] or {} do not split, e.g. --grid 'losses=[],[{name: redundancy}]'.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1, max=256),
    default=1,
    show_default=True,
    help="Runs at once, one process each (train.torch_threads: auto gives each its share of the cores).",
)
@click.option(
    "--episodes",
    type=click.IntRange(min=1, max=10**5),
    default=100,
    show_default=True,
    help="Deterministic evaluation episodes of each final policy (marlplug evaluate).",
)
@click.option(
    "--eval-backend",
    default=None,
    help="Backend to evaluate on (default: each run's train.eval_backend, else its own).",
)
@click.option("--name", default=None, help="The sweep's name (default: CONFIG's file stem).")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The sweep's folder (default: sweeps/NAME). The same command again with the same "
    "folder skips finished runs and resumes interrupted ones.",
)
def sweep(
    config_path: Path | None,
    seeds: str,
    overrides: tuple[str, ...],
    grid: tuple[str, ...],
    jobs: int,
    episodes: int,
    eval_backend: str | None,
    name: str | None,
    out: Path | None,
) -> None:
    """Train every grid configuration with every seed and evaluate each; results for `compare`.

    Each run is its own `marlplug train` process in OUT/runs/, its output in OUT/logs/; then
    `marlplug evaluate` runs on its final policy. OUT/results.json holds every finished run
    (final evaluation, curve of periodic evaluations, machine) and is rewritten after each one.
    Ctrl-C checkpoints the runs under way; the same command again finishes the sweep.
    """
    # torch loads here, once the arguments are known to be good
    from marlplug.experiments.sweep import RESULTS_NAME, EvaluationSettings, SweepRunner

    seed_list = parse_seeds(seeds)
    axes = [GridAxis.parse(text) for text in grid]
    name = name or (config_path.stem if config_path is not None else "default")
    planned = plan_runs(config_path, name=name, seeds=seed_list, overrides=overrides, grid=axes)
    if eval_backend is not None:  # checked now, not after the first run has trained
        registry = get_plugin_manager().registry("env")
        for scenario in {run.config.env.name for run in planned}:
            registry.get_env(scenario, eval_backend, backend_field="--eval-backend")
    out = out if out is not None else Path("sweeps") / name
    config = str(config_path if config_path is not None else default_config_path())
    results = SweepResults(
        name=name,
        config=config,
        overrides=list(overrides),
        grid={axis.key: list(axis.values) for axis in axes},
        seeds=seed_list,
        configurations=list(dict.fromkeys(run.configuration.name for run in planned)),
        jobs=jobs,
        machine=Machine.here(),
    )
    if (out / RESULTS_NAME).is_file():
        results = _continue(load_results(out / RESULTS_NAME, argument="--out"), results, out)
    click.echo(
        f"sweep '{name}': {len(results.configurations)} configuration(s) x {len(seed_list)} "
        f"seed(s), {jobs} at a time, in {out}"
    )
    oversubscribed = _oversubscription_note(planned, jobs)
    if oversubscribed:
        click.echo(oversubscribed, err=True)
    runner = SweepRunner(
        out,
        config_path=config_path,
        evaluation=EvaluationSettings(episodes=episodes, backend=eval_backend),
        echo=click.echo,
    )
    try:
        runner.run_all(results, planned, jobs=jobs)
    except KeyboardInterrupt as stop:  # SweepInterrupted: every finished run is saved
        click.echo(str(stop), err=True)
        raise click.exceptions.Exit(130) from None
    click.echo(f"results: {out / RESULTS_NAME}")
    click.echo(f"compare: marlplug compare {out / RESULTS_NAME}")


def _oversubscription_note(planned: list[PlannedRun], jobs: int) -> str | None:
    """A note when ``jobs`` runs at once want more torch threads than the machine has cores: they
    would slow each other down. ``auto`` (the default) shares the cores among the runs itself."""
    cores = os.cpu_count() or 1

    def wanted(threads: int | str | None) -> int:
        return 1 if threads == "auto" else cores if threads is None else int(threads)

    threads = max(wanted(run.config.train.torch_threads) for run in planned)
    if min(jobs, len(planned)) * threads <= cores:
        return None
    return (
        f"note: --jobs {jobs} runs of train.torch_threads={threads} each want more threads than "
        f"this machine's {cores} cores; add --set train.torch_threads=auto (each run takes its "
        "share of the free cores) or fewer --jobs for shorter wall times"
    )


def _continue(previous: SweepResults, wanted: SweepResults, out: Path) -> SweepResults:
    """The results already in ``out`` with this sweep's seeds added, if they are the same sweep."""
    same = ("config", "overrides", "grid")
    changed = [key for key in same if getattr(previous, key) != getattr(wanted, key)]
    if changed:
        raise UserError(
            f"--out: {out} holds the results of another sweep ({', '.join(changed)} differ: "
            f"{getattr(previous, changed[0])!r} there); give another --out, or the same command"
        )
    return previous.model_copy(
        update={
            "seeds": list(dict.fromkeys([*previous.seeds, *wanted.seeds])),
            "configurations": wanted.configurations,
            "jobs": wanted.jobs,
        }
    )
