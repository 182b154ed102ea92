"""What a training run returns (:class:`TrainResult`): its final state rows, where its files went and
what it measured."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from marlplug.runs.evaluations import EvaluationPoint
from marlplug.runs.iteration_report import IterationLog
from marlplug.runs.stats import ReturnPoint
from marlplug.runs.summary import RunTotals


@dataclass
class TrainResult(RunTotals):
    """What a run leaves behind, and where.

    ``iterations`` holds this call's iterations only (a resumed run's earlier ones are in
    ``rounds.csv``); ``history`` holds the return (:class:`ReturnPoint`) over the whole run;
    ``theta``/``opt_state`` every agent's final rows.
    """

    theta: torch.Tensor
    opt_state: torch.Tensor
    iterations: list[IterationLog]
    run_dir: Path
    checkpoint: Path
    metrics_dir: Path
    learning_curve: Path
    rounds_csv: Path
    timeline: Path | None = None
    #: The folder of the checkpoints ``train.keep_checkpoint_every`` kept (None: none kept).
    kept_checkpoints: Path | None = None
    history: list[ReturnPoint] = field(default_factory=list)
    evaluations: list[EvaluationPoint] = field(default_factory=list)
    frames: int = 0
    #: Wall time of this call's training loop, periodic evaluations excluded (``evaluation_s``),
    #: so frames/s is the training's.
    seconds: float = 0.0
    evaluation_s: float = 0.0
    total_frames: int = 0
    completed: int = 0
    notes: list[str] = field(default_factory=list)
    #: Agent updates that met non-finite values, in one line (None: none).
    nonfinite: str | None = None
    #: Where the metrics went, in words (``metrics_dir``; W&B's run folder, MLflow's store and run).
    metrics_location: str = ""
