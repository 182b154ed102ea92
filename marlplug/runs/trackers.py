"""Experiment trackers as a run's metrics logger: Weights & Biases and MLflow through TorchRL's
``WandbLogger`` and ``MLFlowLogger``, plus what a tracker keeps beyond scalars (the config, images,
how the run ended) and the tracker run's id (``RUN_DIR/trackers.json``) that ``--resume`` continues.

Both stay on this machine by default: W&B offline under ``RUN_DIR/wandb``, MLflow in an SQLite
store ``RUN_DIR/mlflow.db`` with its artifacts in ``RUN_DIR/mlartifacts``.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from torchrl.record.loggers.mlflow import MLFlowLogger
from torchrl.record.loggers.wandb import WandbLogger

from marlplug.config import LoggingSection, MLflowSection, WandbSection
from marlplug.errors import UserError
from marlplug.runs.atomic_files import write_atomically
from marlplug.runs.run_logger import RunOutcome, missing_package

#: The run folder's record of its tracker runs: ``{"wandb": {"settings": ..., "run_id": ...}}``.
TRACKERS_NAME = "trackers.json"
MLFLOW_DB_NAME = "mlflow.db"
MLFLOW_ARTIFACTS_NAME = "mlartifacts"


def flat_params(config: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """``config`` as one level of ``section.field`` keys and text values, as MLflow stores params
    (its keys allow no brackets, so list items are ``losses.0.name``; values are JSON but for text).

    Examples:
        >>> flat_params({"seed": 0, "train": {"lr": 0.001, "eval_every": None},
        ...              "losses": [{"name": "redundancy"}], "coding": {}})
        {'seed': '0', 'train.lr': '0.001', 'train.eval_every': 'null', 'losses.0.name': 'redundancy', 'coding': '{}'}
    """
    flat: dict[str, str] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flat_params(value, f"{name}."))
        elif isinstance(value, list) and value:
            flat.update(flat_params({str(i): item for i, item in enumerate(value)}, f"{name}."))
        else:
            flat[name] = value if isinstance(value, str) else json.dumps(value)
    return flat


def first_line(error: BaseException) -> str:
    """An exception's first line of text (trackers' messages run to paragraphs).

    >>> first_line(ValueError("no store here\\nsee the migration guide"))
    'no store here'
    """
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def saved_run_id(run_dir: Path, backend: str, settings: Mapping[str, Any]) -> str | None:
    """The tracker run this run folder logged to with ``backend`` and the same ``settings``, if
    any (an unreadable record counts as none: the resumed run logs to a new tracker run)."""
    try:
        entry = json.loads((run_dir / TRACKERS_NAME).read_text())[backend]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(entry, dict) or entry.get("settings") != dict(settings):
        return None
    run_id = entry.get("run_id")
    return run_id if isinstance(run_id, str) and run_id else None


def save_run_id(run_dir: Path, backend: str, settings: Mapping[str, Any], run_id: str) -> None:
    """Record ``run_id`` as the run folder's ``backend`` run (other backends' entries are kept)."""
    path = run_dir / TRACKERS_NAME
    try:
        record = json.loads(path.read_text())
        record = record if isinstance(record, dict) else {}
    except (OSError, ValueError):
        record = {}
    record[backend] = {"settings": dict(settings), "run_id": run_id}
    text = json.dumps(record, indent=2) + "\n"
    write_atomically(path, lambda stream: stream.write(text.encode()))


class WandbRunLogger(WandbLogger):
    """TorchRL's ``WandbLogger`` for one marlplug run: named after the run folder, its files in
    ``RUN_DIR/wandb``, offline unless ``logging.wandb.mode`` says online.

    The mode goes to ``wandb.init`` itself rather than through TorchRL's ``offline`` flag, which
    sets ``WANDB_MODE`` for the rest of the process. TorchRL's record of the installed packages is
    off: it goes to the config's ``env`` key, where the run's ``env`` section belongs.
    """

    def __init__(self, settings: WandbSection, run_dir: Path, *, run_id: str | None) -> None:
        super().__init__(
            exp_name=run_dir.name,
            save_dir=str(run_dir),
            id=run_id,
            project=settings.project,
            entity=settings.entity,
            mode=settings.mode,
            log_env_packages=False,
        )

    @property
    def run_id(self) -> str:
        return str(self.experiment.id)

    @property
    def location(self) -> str:
        if self.experiment.offline:  # the folder `wandb sync` uploads; files/ is inside it
            return str(Path(self.experiment.dir).parent)
        return str(self.experiment.url)

    def log_run_config(self, config: Mapping[str, Any]) -> None:
        self.log_hparams(dict(config))

    def log_image_file(self, path: Path) -> None:
        import wandb

        self.experiment.log({path.stem: wandb.Image(str(path))})

    def finish(self, outcome: RunOutcome) -> None:
        import wandb

        # W&B knows a finished run (exit code 0) and a failed one.
        self.experiment.finish(exit_code=0 if outcome == "finished" else 1)
        # finish() may return before wandb-core has written the run's log (offline, the .wandb
        # file can still be empty); teardown waits for it, so the run's files are complete when
        # the run returns, ready for `wandb sync`. The next run starts wandb-core again.
        wandb.teardown()


class MLflowRunLogger(MLFlowLogger):
    """TorchRL's ``MLFlowLogger`` for one marlplug run: experiment ``logging.mlflow.experiment``,
    the run named after the run folder, or the given run continued (``--resume``).

    Without a tracking URI the store is ``sqlite:///RUN_DIR/mlflow.db`` with artifacts in
    ``RUN_DIR/mlartifacts``: MLflow 3 refuses its old ``./mlruns`` file store unless told to.
    """

    def __init__(self, settings: MLflowSection, run_dir: Path, *, run_id: str | None) -> None:
        self.run_name = run_dir.name
        self.resumed_run_id = run_id
        folder = run_dir.resolve()
        tracking_uri = settings.tracking_uri or f"sqlite:///{(folder / MLFLOW_DB_NAME).as_posix()}"
        artifacts = (
            (folder / MLFLOW_ARTIFACTS_NAME).as_uri() if settings.tracking_uri is None else None
        )
        self.tracking_uri = tracking_uri
        super().__init__(settings.experiment, tracking_uri, artifact_location=artifacts)

    def _create_experiment(self) -> Any:
        import mlflow

        if self.resumed_run_id is not None:
            active = mlflow.start_run(run_id=self.resumed_run_id)
            self.id = active.info.experiment_id
            return active
        active = super()._create_experiment()
        mlflow.set_tag("mlflow.runName", self.run_name)  # TorchRL starts the run unnamed
        return active

    @property
    def run_id(self) -> str:
        return str(self.experiment.info.run_id)

    @property
    def location(self) -> str:
        return f"{self.tracking_uri}, run {self.run_id}"

    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        """Log ``cfg`` as flat params (:func:`flat_params`). MLflow params are write-once, so a
        resumed run adds only the new ones (``config.yaml`` among the artifacts has them all).

        TorchRL's version imports omegaconf even for a plain dict.
        """
        import mlflow

        logged = mlflow.get_run(self.run_id).data.params
        params = {key: value for key, value in flat_params(cfg).items() if key not in logged}
        if params:
            mlflow.log_params(params)

    def log_run_config(self, config: Mapping[str, Any]) -> None:
        import mlflow

        self.log_hparams(config)
        mlflow.log_dict(dict(config), "config.yaml")

    def log_image_file(self, path: Path) -> None:
        import mlflow

        mlflow.log_artifact(str(path))

    def finish(self, outcome: RunOutcome) -> None:
        import mlflow

        status = {"finished": "FINISHED", "interrupted": "KILLED", "failed": "FAILED"}[outcome]
        mlflow.end_run(status=status)


def open_wandb(logging: LoggingSection, run_dir: Path, *, resume: bool) -> WandbRunLogger:
    """A :class:`WandbRunLogger` for ``run_dir``; with ``resume``, the W&B run it logged to before
    (same project and entity), whose id ``RUN_DIR/trackers.json`` holds."""
    if importlib.util.find_spec("wandb") is None:
        raise missing_package("wandb", "wandb")
    import wandb

    settings = logging.wandb.model_dump(include={"project", "entity"})
    run_id = saved_run_id(run_dir, "wandb", settings) if resume else None
    try:
        logger = WandbRunLogger(logging.wandb, run_dir, run_id=run_id)
    except wandb.errors.Error as error:
        raise UserError(
            f"logging.wandb: W&B could not start the run: {first_line(error)} "
            f"(logging.wandb.mode: offline logs to {run_dir / 'wandb'} only)"
        ) from error
    save_run_id(run_dir, "wandb", settings, logger.run_id)
    return logger


def open_mlflow(logging: LoggingSection, run_dir: Path, *, resume: bool) -> MLflowRunLogger:
    """A :class:`MLflowRunLogger` for ``run_dir``; with ``resume``, the MLflow run it logged to
    before (same tracking URI and experiment), whose id ``RUN_DIR/trackers.json`` holds."""
    if importlib.util.find_spec("mlflow") is None:
        raise missing_package("mlflow", "mlflow")
    from mlflow.exceptions import MlflowException

    settings = logging.mlflow.model_dump()
    run_id = saved_run_id(run_dir, "mlflow", settings) if resume else None
    try:
        logger = MLflowRunLogger(logging.mlflow, run_dir, run_id=run_id)
    except ModuleNotFoundError as error:  # e.g. sqlalchemy, which the SQLite store needs
        raise missing_package("mlflow", error.name or "mlflow") from error
    except MlflowException as error:
        where = logging.mlflow.tracking_uri or f"sqlite:///{run_dir / MLFLOW_DB_NAME}"
        hint = f"; delete {run_dir / TRACKERS_NAME} to log to a new run" if run_id else ""
        raise UserError(
            f"logging.mlflow: MLflow could not start the run at {where}: {first_line(error)}{hint}"
        ) from error
    save_run_id(run_dir, "mlflow", settings, logger.run_id)
    return logger
