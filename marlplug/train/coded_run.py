"""The entry points MADDPG runs had before the one orchestrator (:mod:`marlplug.train.orchestrator`),
kept for existing callers: both are :func:`~marlplug.train.orchestrator.run`."""

from __future__ import annotations

from pathlib import Path

from marlplug.config import MarlplugConfig
from marlplug.errors import ConfigError
from marlplug.train.orchestrator import run
from marlplug.train.result import TrainResult


def run_maddpg(
    config: MarlplugConfig,
    *,
    iterations: int | None = None,
    run_dir: str | Path | None = None,
    resume_dir: Path | None = None,
    progress: bool | None = None,
) -> TrainResult:
    """:func:`marlplug.train.orchestrator.run` (any learner algorithm, coded or centralized)."""
    return run(
        config, iterations=iterations, run_dir=run_dir, resume_dir=resume_dir, progress=progress
    )


def run_coded(
    config: MarlplugConfig, *, iterations: int | None = None, run_dir: str | Path | None = None
) -> TrainResult:
    """:func:`marlplug.train.orchestrator.run` for a config with a ``coding:`` section.

    Examples:
        >>> from marlplug import load_config
        >>> config = load_config(data={"algorithm": {"name": "maddpg"},
        ...     "coding": {"scheme": "mds", "learners": 4}})  # doctest: +SKIP
        >>> result = run_coded(config, iterations=2)  # doctest: +SKIP
    """
    if config.coding is None:
        raise ConfigError("coding: run_coded needs a coding section")
    return run(config, iterations=iterations, run_dir=run_dir)
