"""``marlplug compare RESULTS...``: per-configuration IQM, mean and median with stratified bootstrap
95% intervals, probability of improvement over a baseline, and a figure of final scores,
sample-efficiency curves and performance profiles, from the results files of ``marlplug sweep``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from marlplug.cli.render import check_writable
from marlplug.experiments.results import load_results


@click.command()
@click.argument(
    "results_paths",
    metavar="RESULTS...",
    nargs=-1,
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
)
@click.option(
    "--metric",
    type=click.Choice(["score", "return"]),
    default=None,
    help="What to compare: the oracle-normalized score, or the team return (default: score "
    "where every run has one).",
)
@click.option(
    "--baseline",
    default=None,
    help="The configuration the others are compared with (default: the first one).",
)
@click.option(
    "--reps",
    type=click.IntRange(min=100, max=10**6),
    default=2000,
    show_default=True,
    help="Bootstrap resamples.",
)
@click.option(
    "--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Bootstrap seed."
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to draw the figure (default: compare.png beside the first RESULTS).",
)
@click.option("--no-plot", is_flag=True, help="Draw no figure.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON for tools.")
def compare(
    results_paths: tuple[Path, ...],
    metric: str | None,
    baseline: str | None,
    reps: int,
    seed: int,
    plot_path: Path | None,
    no_plot: bool,
    as_json: bool,
) -> None:
    """Compare sweep results: IQM, mean, median with 95% intervals; P(improvement); a figure.

    Each configuration's final evaluations (one per seed) are aggregated with rliable's
    stratified bootstrap; the figure shows them, the IQM of the periodic evaluations over frames
    with its band, and the performance profile (fraction of runs above each value).
    """
    from marlplug.experiments.compare import compare as run_comparison
    from marlplug.experiments.compare import gather

    sources = [(path, load_results(path)) for path in results_paths]
    groups = gather(sources)
    if metric is None:
        has_score = all(run.evaluation.score is not None for g in groups for run in g.runs)
        metric = "score" if has_score else "return"
    figure = None if no_plot else (plot_path or results_paths[0].parent / "compare.png")
    if figure is not None:  # before the bootstrap, not after it
        check_writable(figure, option="--plot")
    comparison = run_comparison(
        groups,
        metric="score" if metric == "score" else "return",
        baseline=baseline,
        reps=reps,
        seed=seed,
        figure=figure,
    )
    if as_json:
        click.echo(json.dumps(comparison.as_dict(), indent=2))
    else:
        click.echo("\n".join(comparison.lines()))
