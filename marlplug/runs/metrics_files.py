"""A run's metrics logger (:func:`make_logger`: TorchRL's CSV with a header row per file,
TensorBoard, W&B or MLflow) and the metric files, restarted at the checkpoint when a run resumes."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from torchrl.record.loggers import CSVLogger, Logger, TensorboardLogger

from marlplug.config import LoggingSection
from marlplug.errors import UserError
from marlplug.runs.atomic_files import write_atomically
from marlplug.runs.run_logger import RunLogger, RunOutcome, missing_package
from marlplug.runs.trackers import open_mlflow, open_wandb

#: The first column of every scalar CSV; the second is named after the metric (``step,entropy``).
STEP_COLUMN = "step"


class RunFolderLogger(Logger):
    """The :class:`RunLogger` side of the loggers that write into the run folder (CSV,
    TensorBoard): the folder holds ``config.yaml`` and the plots already."""

    @property
    def location(self) -> str:
        return str(self.experiment.log_dir)

    def log_run_config(self, config: Mapping[str, Any]) -> None:
        """Nothing: ``config.yaml`` is beside the metrics."""

    def log_image_file(self, path: Path) -> None:
        """Nothing: the image is a file of the run folder."""

    def finish(self, outcome: RunOutcome) -> None:
        self.close()


class FolderTensorboardLogger(RunFolderLogger, TensorboardLogger):
    """TorchRL's ``TensorboardLogger`` as a :class:`RunLogger`."""


class HeaderedCSVLogger(RunFolderLogger, CSVLogger):
    """TorchRL's ``CSVLogger`` whose scalar files start with a header row, ``step,<metric>``.

    TorchRL writes headerless ``step,value`` files and appends to them; this writes the header
    first whenever a file is new or empty, and leaves the rest to TorchRL, so the files stay
    TorchRL's format plus one line (``pandas.read_csv`` reads them as they are).

    Examples:
        >>> import tempfile
        >>> logger = HeaderedCSVLogger(exp_name="metrics", log_dir=tempfile.mkdtemp())
        >>> logger.log_scalar("agent_0/entropy", 0.5, step=1)
        >>> path = Path(logger.experiment.log_dir) / "scalars" / "agent_0" / "entropy.csv"
        >>> path.read_text().split()
        ['step,entropy', '1,0.5']
    """

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        path = Path(self.experiment.log_dir) / "scalars" / f"{name}.csv"
        if str(path) not in self.experiment.files and (
            not path.is_file() or path.stat().st_size == 0
        ):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{STEP_COLUMN},{path.stem}\n")
        super().log_scalar(name, value, step=step)


def make_logger(
    logging: LoggingSection, run_dir: Path, *, keep_before: int, resume: bool = False
) -> RunLogger:
    """The run's metrics logger, as ``logging.backend`` says: ``csv`` or ``tensorboard`` under
    ``run_dir/metrics``, ``wandb`` or ``mlflow`` where ``logging.wandb``/``logging.mlflow`` say
    (:mod:`marlplug.runs.trackers`).

    ``keep_before`` is the first step this run logs: CSV rows of that step and later are dropped
    first (:func:`restart_scalar_csvs`), as a resumed run logs those steps again. TensorBoard event
    files are left as they are: a new record at step s makes TensorBoard's default loader drop the
    tag's records at s and later, so the resumed run's values replace the old ones (the legacy
    loader, ``--load_fast=false`` or ``EventAccumulator``, shows both). With ``resume``, W&B and
    MLflow continue the tracker run the folder logged to, and get those steps again (the same
    values: a resumed run is bit-identical).
    """
    backend = logging.backend
    if backend == "csv":
        logger = HeaderedCSVLogger(exp_name="metrics", log_dir=str(run_dir))
        restart_scalar_csvs(Path(logger.experiment.log_dir) / "scalars", keep_before)
        return logger
    if backend == "tensorboard":
        try:
            return FolderTensorboardLogger(exp_name="metrics", log_dir=str(run_dir))
        except ImportError as exc:
            raise missing_package("tensorboard", "tensorboard") from exc
    if backend == "wandb":
        return open_wandb(logging, run_dir, resume=resume)
    if backend == "mlflow":
        return open_mlflow(logging, run_dir, resume=resume)
    raise UserError(
        f"logging.backend: unknown backend '{backend}'; available: csv, tensorboard, wandb, mlflow"
    )


@contextmanager
def open_run_logger(
    logging: LoggingSection, run_dir: Path, *, keep_before: int, resume: bool = False
) -> Iterator[RunLogger]:
    """:func:`make_logger`, finished when the block ends: ``interrupted`` by Ctrl-C or SIGTERM
    (``KeyboardInterrupt``, :class:`~marlplug.runs.interrupt.TrainingInterrupted`), ``failed`` by
    any other exception, else ``finished``.

    Examples:
        >>> import tempfile
        >>> from marlplug.config import LoggingSection
        >>> with open_run_logger(LoggingSection(), Path(tempfile.mkdtemp()), keep_before=1) as log:
        ...     log.log_metrics({"return_team": -3.0}, step=1)
        {'return_team': -3.0}
    """
    logger = make_logger(logging, run_dir, keep_before=keep_before, resume=resume)
    outcome: RunOutcome = "failed"
    try:
        yield logger
        outcome = "finished"
    except KeyboardInterrupt:
        outcome = "interrupted"
        raise
    finally:
        logger.finish(outcome)


def _write_text_atomically(path: Path, text: str) -> None:
    write_atomically(path, lambda stream: stream.write(text.encode()))


def restart_rounds_csv(
    path: Path, columns: Sequence[str], keep_before: int, *, key: str = "iteration"
) -> int:
    """Start a rounds log (``rounds.csv``) afresh with the header ``columns``, keeping the rows whose
    ``key`` column is below ``keep_before``; return how many were kept.

    A resumed run passes its checkpoint's position: rows written after the last checkpoint belong to
    steps the resumed run does again, and would otherwise appear twice. A fresh run passes 0. Each
    row carries its own ``key`` (a coded run writes one row per round, each with its iteration), so
    a step's rows are kept or dropped together. Rows written under an older header keep the columns
    ``columns`` shares with it; the new ones are left empty there.

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
    the header or the torn end of a write cut short by a crash (the step is written first)."""
    step, comma, _ = line.partition(",")
    try:
        return float(step) if comma else math.inf
    except ValueError:
        return math.inf


def read_scalar_csv(path: Path) -> list[tuple[int, float]]:
    """The ``(step, value)`` rows of one scalar file (with or without its header row).

    Examples:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "entropy.csv"
        >>> _ = path.write_text("step,entropy\\n1,0.5\\n2,0.25\\n")
        >>> read_scalar_csv(path)
        [(1, 0.5), (2, 0.25)]
    """
    rows = []
    for line in path.read_text().splitlines():
        if _scalar_step(line) < math.inf:
            step, _, value = line.partition(",")
            rows.append((int(float(step)), float(value)))
    return rows


def restart_scalar_csvs(scalars_dir: Path, keep_before: int) -> int:
    """Keep only the rows of steps below ``keep_before`` in every scalar file of a
    :class:`HeaderedCSVLogger` (``scalars_dir``, one ``step,value`` file per name; a name with
    ``/`` makes subfolders); return how many rows were kept. Each file is rewritten with its header
    row (added to files written before headers existed).

    The rounds log's counterpart (:func:`restart_rounds_csv`) for the metrics: TorchRL's logger
    appends, so without this the steps a resumed run does again would appear twice.

    Examples:
        >>> import tempfile
        >>> scalars = Path(tempfile.mkdtemp())
        >>> (scalars / "agent_0").mkdir()
        >>> _ = (scalars / "agent_0" / "entropy.csv").write_text("step,entropy\\n1,0.5\\n2,0.4\\n3,0.3\\n")
        >>> restart_scalar_csvs(scalars, 3)
        2
        >>> (scalars / "agent_0" / "entropy.csv").read_text().split()
        ['step,entropy', '1,0.5', '2,0.4']
    """
    kept = 0
    for path in sorted(scalars_dir.rglob("*.csv")):
        lines = path.read_text().splitlines()
        rows = [line for line in lines if _scalar_step(line) < keep_before]
        header = f"{STEP_COLUMN},{path.stem}"
        if len(rows) < len(lines) - 1 or not lines or lines[0] != header:
            _write_text_atomically(path, "".join(f"{row}\n" for row in [header, *rows]))
        kept += len(rows)
    return kept
