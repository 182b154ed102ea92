"""``marlplug train [CONFIG] [--set k=v ...] [--resume RUN_DIR]``: joint multi-agent PPO from a config."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import click

DEFAULT_CONFIG = "default.yaml"
#: Updates averaged at each end of the run for the summary's start -> end comparison.
SMOOTHING_UPDATES = 5


def default_config_path() -> Path:
    """The packaged default config (cooperative navigation, 3 agents)."""
    return Path(str(resources.files("marlplug.configs").joinpath(DEFAULT_CONFIG)))


@click.command()
@click.argument("config_path", metavar="CONFIG", required=False, type=click.Path(path_type=Path))
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a config value, e.g. --set train.updates=10 (repeatable).")
@click.option("--resume", "resume_dir", type=click.Path(path_type=Path), default=None,
              help="Continue the run in this folder from its last checkpoint.")
@click.option("--no-progress", is_flag=True, help="Do not show the progress bar.")
def train(config_path: Path | None, overrides: tuple[str, ...], resume_dir: Path | None, no_progress: bool) -> None:
    """Train with CONFIG (default: the packaged cooperative-navigation config)."""
    from marlplug.config import load_config
    from marlplug.errors import UserError
    from marlplug.train.run import load_run_config, run_training

    if resume_dir is not None:
        if config_path is not None:
            raise UserError("--resume: give either CONFIG or --resume RUN_DIR, not both")
        config = load_run_config(resume_dir, list(overrides))
    else:
        config = load_config(config_path or default_config_path(), list(overrides))
    result = run_training(config, resume_dir=resume_dir, progress=False if no_progress else None)
    final = "-" if result.final_return is None else f"{result.final_return:.3f}"
    first = "-" if not result.history else f"{result.history[0][1]:.3f}"
    click.echo(f"mean return: {first} -> {final} over {result.frames} frames ({result.fps:.0f} frames/s)")
    window = min(SMOOTHING_UPDATES, len(result.history) // 2)
    if window > 0:
        returns = [value for _, value in result.history]
        start, end = sum(returns[:window]) / window, sum(returns[-window:]) / window
        click.echo(f"mean return, first {window} vs last {window} updates: {start:.3f} -> {end:.3f} "
                   f"({end - start:+.3f})")
    click.echo(f"run folder:     {result.run_dir}")
    click.echo(f"metrics:        {result.metrics_dir} ({config.logging.backend})")
    click.echo(f"checkpoint:     {result.checkpoint}")
    click.echo(f"learning curve: {result.learning_curve}")
    click.echo(f"resume with:    marlplug train --resume {result.run_dir}")
