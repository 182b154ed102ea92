"""``marlplug train [CONFIG] [--set k=v ...] [--resume RUN_DIR]``: train from a config.

Every learner algorithm (``ppo``, ``maddpg``, plugins) runs through the one orchestrator,
:func:`marlplug.train.orchestrator.run` (on coded learners with a ``coding:`` section).
"""

from __future__ import annotations

from pathlib import Path

import click

from marlplug.configs import default_config_path


@click.command()
@click.argument("config_path", metavar="[CONFIG]", required=False, type=click.Path(path_type=Path))
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config value, e.g. --set train.updates=10 (repeatable).",
)
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Continue the run in this folder from its last checkpoint.",
)
@click.option("--no-progress", is_flag=True, help="Do not show the progress bar.")
def train(
    config_path: Path | None, overrides: tuple[str, ...], resume_dir: Path | None, no_progress: bool
) -> None:
    """Train with CONFIG (default: the packaged cooperative-navigation config).

    Ctrl-C (or SIGTERM) finishes the update under way, writes its checkpoint and exits with 130
    (143); a second Ctrl-C stops at once, keeping the last checkpoint.
    """
    from marlplug.runs.interrupt import TrainingInterrupted

    try:
        _train(config_path, overrides, resume_dir, no_progress)
    except TrainingInterrupted as stop:
        click.echo(str(stop), err=True)
        raise click.exceptions.Exit(stop.exit_status) from None


def _train(
    config_path: Path | None, overrides: tuple[str, ...], resume_dir: Path | None, no_progress: bool
) -> None:
    from marlplug.config import load_config
    from marlplug.errors import UserError
    from marlplug.runs.run_config import load_run_config
    from marlplug.runs.summary import summary_lines

    if resume_dir is not None:
        if config_path is not None:
            raise UserError("--resume: give either CONFIG or --resume RUN_DIR, not both")
        config = load_run_config(resume_dir, list(overrides))
    else:
        config = load_config(config_path or default_config_path(), list(overrides))
    progress = False if no_progress else None
    from marlplug.train.run import run_training

    result = run_training(config, resume_dir=resume_dir, progress=progress)
    labelled = [("rounds log", result.rounds_csv), ("timeline", result.timeline)]
    outputs = [
        (label, path)
        for label, path in [
            ("checkpoint", result.checkpoint),
            ("kept checkpoints", result.kept_checkpoints),
            ("learning curve", result.learning_curve),
            *labelled,
        ]
        if path is not None
    ]
    lines = summary_lines(
        result,
        run_dir=result.run_dir,
        metrics=f"{result.metrics_location or result.metrics_dir} ({config.logging.backend})",
        outputs=outputs,
    )
    if result.nonfinite is not None:
        lines.insert(1, f"warning: {result.nonfinite}")
    for line in lines:
        click.echo(line)
