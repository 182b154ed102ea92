"""Where a run's numbers go: TorchRL loggers (CSV or TensorBoard), a progress bar, a learning curve,
the rounds log of coded runs."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from torchrl.record.loggers import CSVLogger, Logger

from marlplug.errors import UserError
from marlplug.train.checkpoint import write_atomically


def make_logger(backend: str, run_dir: Path, *, keep_before: int) -> Logger:
    """A TorchRL logger writing under ``run_dir/metrics`` (``csv`` or ``tensorboard``).

    ``keep_before`` is the first step this run logs: CSV rows of that step and later are dropped
    first (:func:`restart_scalar_csvs`), as a resumed run logs those steps again. TensorBoard event
    files are left as they are: a new record at step s makes TensorBoard's default loader drop the
    tag's records at s and later, so the resumed run's values replace the old ones (the legacy
    loader, ``--load_fast=false`` or ``EventAccumulator``, shows both).
    """
    if backend == "csv":
        logger = CSVLogger(exp_name="metrics", log_dir=str(run_dir))
        restart_scalar_csvs(Path(logger.experiment.log_dir) / "scalars", keep_before)
        return logger
    if backend == "tensorboard":
        try:
            from torchrl.record.loggers import TensorboardLogger

            return TensorboardLogger(exp_name="metrics", log_dir=str(run_dir))
        except ImportError as exc:
            raise UserError(
                "logging.backend: tensorboard needs the tensorboard package "
                "(pip install 'marlplug[tensorboard]'); or use csv"
            ) from exc
    raise UserError(f"logging.backend: unknown backend '{backend}'; available: csv, tensorboard")


#: Updates in the trailing mean drawn over the learning curve (single updates are noisy).
SMOOTHING_WINDOW = 5


def plot_learning_curve(history: list[tuple[int, float]], path: Path, *, title: str) -> Path:
    """Save mean return against environment frames as a PNG, with a trailing mean over updates."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    figure, axes = plt.subplots(figsize=(6, 4))
    if history:
        frames, returns = zip(*history, strict=True)
        axes.plot(frames, returns, marker="o", markersize=3, alpha=0.5, label="per update")
        if len(returns) >= 2 * SMOOTHING_WINDOW:
            window = np.ones(SMOOTHING_WINDOW) / SMOOTHING_WINDOW
            smoothed = np.convolve(returns, window, mode="valid")
            axes.plot(
                frames[SMOOTHING_WINDOW - 1 :],
                smoothed,
                linewidth=2,
                label=f"mean of last {SMOOTHING_WINDOW}",
            )
            axes.legend(loc="lower right")
    axes.set_xlabel("environment frames")
    axes.set_ylabel("mean episode return")
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def _write_text_atomically(path: Path, text: str) -> None:
    write_atomically(path, lambda stream: stream.write(text.encode()))


def restart_rounds_csv(
    path: Path, columns: Sequence[str], keep_before: int, *, key: str = "iteration"
) -> int:
    """Start a rounds log (``rounds.csv``) afresh with the header ``columns``, keeping the rows whose
    ``key`` column is below ``keep_before``; return how many were kept.

    A resumed run passes its checkpoint's position: rows written after the last checkpoint belong to
    steps the resumed run does again, and would otherwise appear twice. A fresh run passes 0.

    Examples:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "rounds.csv"
        >>> _ = path.write_text("iteration,s\\n0,a\\n1,b\\n2,c\\n")
        >>> restart_rounds_csv(path, ["iteration", "s"], 2)
        2
        >>> path.read_text().split()
        ['iteration,s', '0,a', '1,b']
    """
    kept: list[dict[str, str]] = []
    if keep_before > 0 and path.is_file():
        with path.open(newline="") as handle:
            kept = [row for row in csv.DictReader(handle) if int(row[key]) < keep_before]
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(columns), restval="", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(kept)
    _write_text_atomically(path, text.getvalue())
    return len(kept)


def restart_scalar_csvs(scalars_dir: Path, keep_before: int) -> int:
    """Keep only the rows of steps below ``keep_before`` in every scalar file of a TorchRL
    ``CSVLogger`` (``scalars_dir``, one headerless ``step,value`` file per name; a name with ``/``
    makes subfolders); return how many rows were kept.

    The rounds log's counterpart (:func:`restart_rounds_csv`) for the metrics: TorchRL's logger
    appends, so without this the steps a resumed run does again would appear twice.

    Examples:
        >>> import tempfile
        >>> scalars = Path(tempfile.mkdtemp())
        >>> (scalars / "agent_0").mkdir()
        >>> _ = (scalars / "agent_0" / "entropy.csv").write_text("1,0.5\\n2,0.4\\n3,0.3\\n")
        >>> restart_scalar_csvs(scalars, 3)
        2
        >>> (scalars / "agent_0" / "entropy.csv").read_text().split()
        ['1,0.5', '2,0.4']
    """
    kept = 0
    for path in sorted(scalars_dir.rglob("*.csv")):
        lines = path.read_text().splitlines()
        # A line without a comma is the torn end of a write cut short by a crash (the step is
        # written first): it belongs to a step after the checkpoint, so it goes too.
        rows = [line for line in lines if "," in line and int(line.split(",", 1)[0]) < keep_before]
        if len(rows) < len(lines):
            _write_text_atomically(path, "".join(f"{row}\n" for row in rows))
        kept += len(rows)
    return kept


class RunTotals:
    """``fps`` and ``final_return`` of a finished run, from its ``history``, ``frames`` and ``seconds``.

    Mixed into the run results of the PPO trainer and of the MADDPG runner.
    """

    history: list[tuple[int, float]]
    frames: int
    seconds: float

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0

    @property
    def final_return(self) -> float | None:
        return self.history[-1][1] if self.history else None


class ProgressBar:
    """A rich progress bar with the live mean return, or nothing when ``show`` is false.

    Used as a context manager that yields ``advance(mean_return)``: one step done, and the latest mean
    episode return (``None`` or NaN: none finished yet, the last value stays).

    Args:
        show: draw the bar.
        total: steps in the whole run.
        completed: steps already done (a resumed run).
        label: the word in front of the bar.

    Examples:
        >>> with ProgressBar(False, total=3, completed=0) as advance:
        ...     advance(-1.5)
    """

    def __init__(self, show: bool, total: int, completed: int, *, label: str = "train") -> None:
        self.show, self.total, self.completed, self.label = show, total, completed, label
        self.bar: Any = None
        self.task: Any = None
        self.latest = "-"

    def __enter__(self) -> Callable[[float | None], None]:
        if self.show:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn(f"[bold]{self.label}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.description}"),
                TimeRemainingColumn(),
                transient=False,
            )
            self.bar.start()
            self.task = self.bar.add_task(
                "mean return: -", total=self.total, completed=self.completed
            )
        return self.advance

    def advance(self, mean_return: float | None) -> None:
        """Count one step done and show ``mean_return`` (kept from before when there is none)."""
        if mean_return is not None and mean_return == mean_return:  # not NaN
            self.latest = f"{mean_return:.3f}"
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=f"mean return: {self.latest}")

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def summary_lines(
    *,
    history: Sequence[tuple[int, float]],
    frames: int,
    fps: float,
    run_dir: Path,
    metrics: str,
    outputs: Sequence[tuple[str, Path]],
    unit: str = "updates",
) -> list[str]:
    """The end-of-run summary every ``marlplug train`` run prints: how the return moved, where
    everything went and how to resume.

    Args:
        history: ``(frames, mean return)`` per step that had a return.
        frames: environment frames taken in this session.
        fps: frames per second in this session.
        run_dir: the run folder.
        metrics: where the metrics went, e.g. ``"runs/x/metrics (csv)"``.
        outputs: further ``(label, path)`` lines (checkpoint, learning curve, ...), in order.
        unit: what one step of ``history`` is called (``updates``, ``iterations``).

    Examples:
        >>> lines = summary_lines(history=[(10, -3.0), (20, -2.0)], frames=20, fps=5.0,
        ...     run_dir=Path("runs/a"), metrics="runs/a/metrics (csv)", outputs=[])
        >>> lines[0]
        'mean return: -3.000 -> -2.000 over 20 frames (5 frames/s)'
    """
    final = "-" if not history else f"{history[-1][1]:.3f}"
    first = "-" if not history else f"{history[0][1]:.3f}"
    lines = [f"mean return: {first} -> {final} over {frames} frames ({fps:.0f} frames/s)"]
    window = min(SMOOTHING_WINDOW, len(history) // 2)
    if window > 0:
        returns = [value for _, value in history]
        start, end = sum(returns[:window]) / window, sum(returns[-window:]) / window
        lines.append(
            f"mean return, first {window} vs last {window} {unit}: {start:.3f} -> {end:.3f} "
            f"({end - start:+.3f})"
        )
    labelled = [("run folder", run_dir), ("metrics", metrics), *outputs]
    width = max(len(label) for label, _ in labelled) + 2
    lines += [f"{label + ':':<{width}}{value}" for label, value in labelled]
    lines.append(f"{'resume with:':<{width}}marlplug train --resume {run_dir}")
    return lines
