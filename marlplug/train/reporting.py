"""Where a run's numbers go: TorchRL loggers (CSV or TensorBoard), progress bars (training and
benchmarks), a learning curve, the rounds log of coded runs."""

from __future__ import annotations

import csv
import io
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from torchrl.record.loggers import CSVLogger, Logger

from marlplug.errors import UserError
from marlplug.plotting import saved_figure
from marlplug.train.checkpoint import write_atomically

if TYPE_CHECKING:
    from rich.console import Console


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
    import numpy as np

    with saved_figure(path, figsize=(6, 4), dpi=100) as (_, axes):
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
            # A row with missing fields is the torn end of a write cut short by a crash.
            kept = [
                row
                for row in csv.DictReader(handle)
                if None not in row.values() and int(row[key]) < keep_before
            ]
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(columns), restval="", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(kept)
    _write_text_atomically(path, text.getvalue())
    return len(kept)


def _scalar_step(line: str) -> float:
    """The step of a ``step,value`` line; infinity (dropped) for a line that is not one, such as
    the torn end of a write cut short by a crash (the step is written first)."""
    step, comma, _ = line.partition(",")
    try:
        return float(step) if comma else math.inf
    except ValueError:
        return math.inf


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
        rows = [line for line in lines if _scalar_step(line) < keep_before]
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


#: Least seconds between two redraws of a bar drawn only in ``advance`` (a bench's): its steps can be
#: milliseconds apart, and a redraw costs about a millisecond.
REDRAW_EVERY_S = 0.1


class StepProgress:
    """A rich progress bar over ``total`` steps of long work, or nothing when ``show`` is false.

    The one progress display of marlplug: training runs (:class:`ProgressBar`) and the benchmarks
    (:func:`stderr_progress`). A context manager; ``advance()`` counts steps done and can replace the
    text after the count.

    Args:
        show: draw the bar.
        total: steps in the whole run.
        completed: steps already done (a resumed run).
        label: the word in front of the bar.
        description: the text after the count until an ``advance`` replaces it.
        console: where to draw (default: rich's console, on stdout).
        redraw_every_s: ``None``: a background thread redraws ten times a second (rich's default).
            A number: the bar is redrawn only inside ``advance``, at most that often (always on the
            last step and on a new description without a step), so nothing runs between two calls,
            e.g. while a benchmark times something.
        transient: erase the bar when done.
        redirect_stdout: while the bar is drawn, print what is written to ``sys.stdout`` above it
            (through ``console``); leave off when stdout goes elsewhere than the bar (a pipe).

    Examples:
        >>> import io
        >>> from rich.console import Console
        >>> screen = io.StringIO()
        >>> console = Console(file=screen, force_terminal=True, width=80, color_system=None)
        >>> with StepProgress(True, 2, label="bench", console=console, redraw_every_s=0) as progress:
        ...     progress.advance("round 1")
        ...     progress.advance("round 2")
        >>> "2/2 round 2" in screen.getvalue()
        True
    """

    def __init__(
        self,
        show: bool,
        total: int,
        *,
        completed: int = 0,
        label: str,
        description: str = "",
        console: Console | None = None,
        redraw_every_s: float | None = None,
        transient: bool = False,
        redirect_stdout: bool = True,
    ) -> None:
        self.show, self.total, self.done, self.label = show, total, completed, label
        self.description, self.console = description, console
        self.redraw_every_s, self.transient = redraw_every_s, transient
        self.redirect_stdout = redirect_stdout
        self.bar: Any = None
        self.task: Any = None
        self.last_redraw = 0.0

    def __enter__(self) -> StepProgress:
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
                console=self.console,
                auto_refresh=self.redraw_every_s is None,
                transient=self.transient,
                redirect_stdout=self.redirect_stdout,
            )
            self.bar.start()
            self.task = self.bar.add_task(self.description, total=self.total, completed=self.done)
            self.last_redraw = time.monotonic()
        return self

    def advance(self, description: str | None = None, *, steps: int = 1) -> None:
        """Count ``steps`` more done (0: only show a new ``description``, e.g. the next phase)."""
        self.done += steps
        if self.bar is None:
            return
        self.bar.update(self.task, advance=steps, description=description)
        if self.redraw_every_s is not None and self._redraw_due(steps):
            self.bar.refresh()
            self.last_redraw = time.monotonic()

    def _redraw_due(self, steps: int) -> bool:
        # The last step and a new phase always show; steps in between at most every redraw_every_s.
        waited = time.monotonic() - self.last_redraw
        return steps == 0 or self.done >= self.total or waited >= (self.redraw_every_s or 0.0)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def stderr_progress(total: int, *, label: str) -> StepProgress:
    """The progress bar of a benchmark (``marlplug bench ...``): on stderr, so ``--json`` on stdout
    stays clean, and only when stderr is an interactive terminal.

    Rich alone would print the finished bar (or an empty line) once to a file or pipe, and it takes
    ``FORCE_COLOR`` (set in many CI setups) for a terminal; so stderr must also be a real TTY, and
    neither ``TERM=dumb`` nor ``TTY_COMPATIBLE=0``. The bar is redrawn only in ``advance``, at most
    every :data:`REDRAW_EVERY_S` and never from a thread, so call ``advance`` between timed sections
    and the timings stay the program's own. It is erased when done.

    Examples:
        >>> with stderr_progress(3, label="bench demo") as progress:  # stderr is no TTY here
        ...     progress.show
        False
    """
    from rich.console import Console

    console = Console(stderr=True)
    return StepProgress(
        _is_interactive(console),
        total,
        label=label,
        console=console,
        redraw_every_s=REDRAW_EVERY_S,
        transient=True,
        # A pipe or file on stdout keeps its bytes; on the same terminal, prints go above the bar.
        redirect_stdout=_isatty(sys.stdout),
    )


def _is_interactive(console: Console) -> bool:
    return console.is_interactive and _isatty(console.file)


def _isatty(stream: IO[str] | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


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
        self.steps = StepProgress(
            show, total, completed=completed, label=label, description="mean return: -"
        )
        self.latest = "-"

    def __enter__(self) -> Callable[[float | None], None]:
        self.steps.__enter__()
        return self.advance

    def advance(self, mean_return: float | None) -> None:
        """Count one step done and show ``mean_return`` (kept from before when there is none)."""
        if mean_return is not None and mean_return == mean_return:  # not NaN
            self.latest = f"{mean_return:.3f}"
        self.steps.advance(f"mean return: {self.latest}")

    def __exit__(self, *exc: object) -> None:
        self.steps.__exit__(*exc)


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
