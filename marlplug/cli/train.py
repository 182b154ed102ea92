"""``marlplug train [CONFIG] [--set k=v ...] [--resume RUN_DIR]``: train from a config.

Joint multi-agent PPO by default (with a ``coding:`` section every minibatch step is one coded round);
MADDPG (``algorithm: {name: maddpg}``, coded or not) goes to
:func:`marlplug.train.coded_run.run_maddpg`. Both print the same summary.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from marlplug.config import MarlplugConfig

DEFAULT_CONFIG = "default.yaml"


def default_config_path() -> Path:
    """The packaged default config (cooperative navigation, 3 agents)."""
    return Path(str(resources.files("marlplug.configs").joinpath(DEFAULT_CONFIG)))


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
    from marlplug.runs.summary import summary_lines
    from marlplug.train.run import load_run_config

    if resume_dir is not None:
        if config_path is not None:
            raise UserError("--resume: give either CONFIG or --resume RUN_DIR, not both")
        config = load_run_config(resume_dir, list(overrides))
    else:
        config = load_config(config_path or default_config_path(), list(overrides))
    progress = False if no_progress else None
    metrics = f"{{}} ({config.logging.backend})"
    if _uses_maddpg_runner(config):
        from marlplug.train.coded_run import run_maddpg

        coded = run_maddpg(config, resume_dir=resume_dir, progress=progress)
        outputs: list[tuple[str, Path]] = [
            (label, path)
            for label, path in (
                ("checkpoint", coded.checkpoint),
                ("learning curve", coded.learning_curve),
                ("rounds log", coded.rounds_csv),
                ("timeline", coded.timeline),
            )
            if path is not None
        ]
        lines = summary_lines(
            coded,
            run_dir=coded.run_dir,
            metrics=metrics.format(coded.metrics_dir),
            outputs=outputs,
            unit="iterations",
        )
    else:
        from marlplug.train.run import run_training

        result = run_training(config, resume_dir=resume_dir, progress=progress)
        joint_outputs = [
            ("checkpoint", result.checkpoint),
            ("learning curve", result.learning_curve),
        ]
        if result.rounds_csv is not None:
            joint_outputs.append(("rounds log", result.rounds_csv))
        lines = summary_lines(
            result,
            run_dir=result.run_dir,
            metrics=metrics.format(result.metrics_dir),
            outputs=joint_outputs,
        )
        if result.nonfinite is not None:
            lines.insert(1, f"warning: {result.nonfinite}")
    for line in lines:
        click.echo(line)


def _uses_maddpg_runner(config: MarlplugConfig) -> bool:
    """An off-policy algorithm (maddpg) runs on the MADDPG runner, PPO (coded or not) on the joint
    trainer; the check imports :mod:`marlplug.distributed` only when it has to."""
    if config.algorithm.name == "ppo":
        return False
    from marlplug.train.coded_run import uses_maddpg_runner

    return uses_maddpg_runner(config)
