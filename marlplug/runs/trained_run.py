"""A trained run to act with: its latest checkpoint (from a run folder or a checkpoint file), the
config the checkpoint was written with, and how far it trained; what ``marlplug evaluate RUN_DIR``
reads before it rebuilds the policy (:func:`~marlplug.runs.checkpoint.load_policy`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from marlplug.config import MarlplugConfig, load_config
from marlplug.errors import UserError
from marlplug.runs.checkpoint import (
    CHECKPOINT_NAME,
    CONFIG_KEY,
    EVALUATIONS_KEY,
    TRAINING_KEY,
    load_checkpoint,
)
from marlplug.runs.evaluations import EvaluationPoint, evaluations_from_checkpoint
from marlplug.runs.run_config import CONFIG_NAME


@dataclass(frozen=True)
class TrainedRun:
    """A checkpoint, its config and its counters.

    Examples:
        >>> import tempfile
        >>> TrainedRun.find(Path(tempfile.mkdtemp()))
        Traceback (most recent call last):
        ...
        marlplug.errors.UserError: RUN_DIR|CHECKPOINT: ... is not a run folder (no config.yaml or checkpoint.pt in it); give a folder made by marlplug train, or a checkpoint file
    """

    checkpoint: Path
    config: MarlplugConfig
    updates: int | None
    """Updates done when the checkpoint was written."""
    frames: int | None
    """Environment frames at that point."""
    evaluations: list[EvaluationPoint] = field(default_factory=list)
    """The run's periodic evaluations up to the checkpoint (``train.eval_every``)."""

    @classmethod
    def find(cls, path: Path, *, argument: str = "RUN_DIR|CHECKPOINT") -> TrainedRun:
        """Read the run at ``path``: a run folder (its ``checkpoint.pt``) or a checkpoint file.

        Raises:
            UserError: one line naming ``argument``: ``path`` does not exist, is a folder that is
                no run folder or a run folder without a checkpoint yet, the file is not a
                marlplug checkpoint, or nothing says how its networks were built.
        """
        checkpoint = find_checkpoint(path, argument=argument)
        state = load_checkpoint(checkpoint, option=argument, required=(TRAINING_KEY,))
        training = state[TRAINING_KEY]
        counters = training.get("counters", {}) if isinstance(training, Mapping) else {}
        return cls(
            checkpoint=checkpoint,
            config=checkpoint_config(checkpoint, state, argument=argument),
            updates=counters.get("iterations"),
            frames=counters.get("env_steps"),
            evaluations=evaluations_from_checkpoint(state.get(EVALUATIONS_KEY, [])),
        )


def find_checkpoint(path: Path, *, argument: str) -> Path:
    """The checkpoint of ``path``: a run folder's latest (``RUN_DIR/checkpoint.pt``) or the file.

    Raises:
        UserError: ``path`` does not exist, is a folder that is no run folder, or a run folder
            with no checkpoint yet.
    """
    if not path.exists():
        raise UserError(f"{argument}: no such run folder or checkpoint file: {path}")
    if not path.is_dir():
        return path
    checkpoint = path / CHECKPOINT_NAME
    if checkpoint.is_file():
        return checkpoint
    if (path / CONFIG_NAME).is_file():
        raise UserError(
            f"{argument}: the run folder {path} has no {CHECKPOINT_NAME} yet (a run writes one "
            f"every train.checkpoint_every updates and at its end)"
        )
    raise UserError(
        f"{argument}: {path} is not a run folder (no {CONFIG_NAME} or {CHECKPOINT_NAME} in it); "
        f"give a folder made by marlplug train, or a checkpoint file"
    )


def checkpoint_config(
    checkpoint: Path, state: Mapping[str, Any], *, argument: str
) -> MarlplugConfig:
    """The config ``checkpoint`` was written with (its ``config`` entry; a checkpoint without one:
    the ``config.yaml`` of its run folder)."""
    saved = state.get(CONFIG_KEY)
    if isinstance(saved, Mapping):
        return load_config(data=saved)
    beside = checkpoint.parent / CONFIG_NAME
    if beside.is_file():
        return load_config(beside)
    raise UserError(
        f"{argument}: {checkpoint} holds no '{CONFIG_KEY}' entry and has no {CONFIG_NAME} beside "
        f"it; the networks it holds cannot be rebuilt"
    )
