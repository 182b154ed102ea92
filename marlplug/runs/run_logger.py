"""What a run logs through (:class:`RunLogger`): TorchRL's logger calls plus what an experiment
tracker keeps beyond scalars. :func:`marlplug.runs.metrics_files.make_logger` makes one per backend."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

from marlplug.errors import UserError

#: How a run ended, as :meth:`RunLogger.finish` is told: done, stopped by a signal (Ctrl-C,
#: SIGTERM), or an error.
RunOutcome = Literal["finished", "interrupted", "failed"]


class RunLogger(Protocol):
    """A TorchRL ``Logger`` (``log_scalar``, ``log_metrics``) that also takes a run's config, its
    plots and its end.

    CSV and TensorBoard write into the run folder, which holds ``config.yaml`` and the plots
    already, so they take those as done; W&B and MLflow store them with the run
    (:mod:`marlplug.runs.trackers`).
    """

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        """One value of the metric ``name`` at ``step`` (an update: iteration + 1)."""

    def log_metrics(self, metrics: dict[str, Any], step: int | None = None) -> dict[str, Any]:
        """Several metrics at one step (one history row for W&B, one request for MLflow)."""
        ...

    @property
    def location(self) -> str:
        """Where the metrics are, in words for the end-of-run summary (a folder, a URI, a URL)."""
        ...

    def log_run_config(self, config: Mapping[str, Any]) -> None:
        """The run's resolved config (``config.yaml``'s content), once at the start."""

    def log_image_file(self, path: Path) -> None:
        """A plot the run wrote (``learning_curve.png``), named after the file's stem."""

    def finish(self, outcome: RunOutcome) -> None:
        """Close the logger; trackers mark the run finished, interrupted or failed."""


def missing_package(backend: str, package: str) -> UserError:
    """The one-line error of a ``logging.backend`` whose package is not installed.

    >>> print(missing_package("wandb", "wandb"))
    logging.backend: wandb needs the wandb package (pip install 'marlplug[wandb]'); or use csv
    """
    return UserError(
        f"logging.backend: {backend} needs the {package} package "
        f"(pip install 'marlplug[{backend}]'); or use csv"
    )
