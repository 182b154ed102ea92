"""``logging.backend: wandb | mlflow``: a real tiny ``marlplug train`` logs its config, its metrics
(periodic evaluations included) and its learning curve to W&B (offline) and MLflow (SQLite in the
run folder), all on this machine; ``--resume`` continues the same tracker run. Every test here
reads back what the tracker stored, so a run that logs nothing fails."""

from __future__ import annotations

import importlib.util
import json
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from marlplug.config import LoggingSection
from marlplug.errors import UserError
from marlplug.runs.checkpoint import EVALUATIONS_KEY, load_checkpoint
from marlplug.runs.metrics_files import make_logger, open_run_logger
from tests.conftest import CliResult
from tests.train.helpers import SMALL_RUN

#: Two updates, each evaluated on one episode: eval_return at steps 1 and 2.
TINY_RUN = [*SMALL_RUN, "train.updates=2", "train.eval_every=1", "train.eval_episodes=1"]


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Keep both trackers off the network and out of the home folder; returns the folder
    ``WANDB_DIR`` points to, where a run must put nothing (its files go to its run folder)."""
    elsewhere = tmp_path / "wandb_env"
    for name, value in {
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "WANDB_DISABLE_GIT": "true",
        "WANDB_DISABLE_CODE": "true",
        "WANDB_CONSOLE": "off",  # leave stdout to pytest's capture
        # A closed local port: a request that should not happen fails here, fast.
        "WANDB_BASE_URL": "http://127.0.0.1:9",
        "WANDB_DIR": str(elsewhere / "dir"),
        "WANDB_CONFIG_DIR": str(elsewhere / "config"),
        "WANDB_CACHE_DIR": str(elsewhere / "cache"),
        "WANDB_DATA_DIR": str(elsewhere / "data"),
        "WANDB_ARTIFACT_DIR": str(elsewhere / "artifacts"),
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "DO_NOT_TRACK": "true",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("WANDB_API_KEY", "WANDB_ENTITY", "WANDB_PROJECT", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(name, raising=False)
    return elsewhere / "dir"


def _train(run_cli: Callable[..., CliResult], *args: str) -> CliResult:
    result = run_cli("train", "--no-progress", *args)
    assert result.exit_code == 0, result.err
    return result


def _evaluations(run_dir: Path) -> list[tuple[int, float]]:
    """(update, mean return) of every evaluation the run's checkpoint holds."""
    entries = load_checkpoint(run_dir / "checkpoint.pt")[EVALUATIONS_KEY]
    return [(entry["update"], entry["mean"]) for entry in entries]


# W&B's transaction log (``run-<id>.wandb``) is in LevelDB's log format: a 7-byte file header,
# then 32 KiB blocks of chunks, each with a 7-byte header (CRC, length, type: full, first, middle,
# last); a chain of chunks holds one protobuf Record. wandb 0.31 ships no Python reader of its own.
_BLOCK = 32 * 1024
_CHUNK_HEADER = struct.Struct("<IHB")


def wandb_records(path: Path) -> Iterator[Any]:
    """The protobuf records of a ``.wandb`` file, in order."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B transaction log"
    position, pending = 7, b""
    while position + _CHUNK_HEADER.size <= len(data):
        left_in_block = _BLOCK - position % _BLOCK
        if left_in_block < _CHUNK_HEADER.size:  # the block's zero-padded tail
            position += left_in_block
            continue
        _, length, kind = _CHUNK_HEADER.unpack_from(data, position)
        chunk = data[position + _CHUNK_HEADER.size : position + _CHUNK_HEADER.size + length]
        position += _CHUNK_HEADER.size + length
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record


def _items(items: Any) -> dict[str, Any]:
    return {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in items}


class OfflineWandbRun:
    """What one offline W&B run folder (``RUN_DIR/wandb/offline-run-*``) holds."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (log,) = folder.glob("run-*.wandb")
        records = list(wandb_records(log))
        kinds = [record.WhichOneof("record_type") for record in records]
        assert "exit" in kinds, f"{folder}: the run was never finished ({kinds})"
        (self.run,) = [record.run for record in records if record.HasField("run")]
        self.config: dict[str, Any] = {}
        self.summary: dict[str, Any] = {}
        self.history: list[dict[str, Any]] = []
        self.files: list[str] = []
        for record in records:
            if record.HasField("config"):
                self.config.update(_items(record.config.update))
            elif record.HasField("summary"):
                self.summary.update(_items(record.summary.update))
            elif record.HasField("history"):
                self.history.append(_items(record.history.item))
            elif record.HasField("files"):
                self.files += [file.path for file in record.files.files]
        (self.exit_code,) = [record.exit.exit_code for record in records if record.HasField("exit")]

    def series(self, name: str) -> list[tuple[int, float]]:
        """(step, value) of a metric; TorchRL logs each metric's step beside it as ``step``."""
        return [(row["step"], row[name]) for row in self.history if name in row]


def test_wandb_offline_run_logs_config_metrics_and_curve(
    run_cli: Callable[..., CliResult], tmp_path: Path, offline: Path
) -> None:
    pytest.importorskip("wandb")
    run_dir = tmp_path / "runs" / "spread"
    result = _train(
        run_cli,
        *[f"--set={override}" for override in TINY_RUN],
        f"--set=logging.dir={run_dir.parent}",
        f"--set=logging.run_name={run_dir.name}",
        "--set=logging.backend=wandb",
        "--set=logging.wandb.project=marlplug-tests",
    )
    (folder,) = (run_dir / "wandb").glob("offline-run-*")
    assert f"metrics:          {folder} (wandb)" in result.out
    assert not offline.exists() or not any(offline.iterdir())  # all of it in the run folder
    run = OfflineWandbRun(folder)
    assert (run.run.display_name, run.run.project) == ("spread", "marlplug-tests")
    assert run.exit_code == 0

    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert {key: run.config[key] for key in saved} == saved  # every section, resolved

    evaluations = _evaluations(run_dir)
    assert [update for update, _ in evaluations] == [1, 2]
    assert run.series("eval_return") == [
        (update, pytest.approx(mean)) for update, mean in evaluations
    ]
    assert run.summary["eval_return"] == pytest.approx(evaluations[-1][1])
    assert [step for step, _ in run.series("return_team")] == [1, 2]

    (image,) = [path for path in run.files if path.startswith("media/images/learning_curve")]
    assert (folder / "files" / image).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert run.summary["learning_curve/_type"] == "image-file"

    # --resume logs to the same W&B run: a second offline folder with the same id, which
    # `wandb sync` uploads after the first.
    _train(run_cli, "--resume", str(run_dir), "--set", "train.updates=3")
    first, second = sorted((run_dir / "wandb").glob("offline-run-*"))
    assert first == folder
    resumed = OfflineWandbRun(second)
    assert resumed.run.run_id == run.run.run_id
    assert resumed.config["train"]["updates"] == 3
    assert [step for step, _ in resumed.series("eval_return")] == [3]


def test_mlflow_run_logs_params_metrics_and_curve(
    run_cli: Callable[..., CliResult], tmp_path: Path, offline: Path
) -> None:
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    run_dir = tmp_path / "runs" / "spread"
    result = _train(
        run_cli,
        *[f"--set={override}" for override in TINY_RUN],
        f"--set=logging.dir={run_dir.parent}",
        f"--set=logging.run_name={run_dir.name}",
        "--set=logging.backend=mlflow",
    )
    store = f"sqlite:///{(run_dir / 'mlflow.db').resolve()}"
    client = MlflowClient(tracking_uri=store)
    experiment = client.get_experiment_by_name("marlplug")
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])
    run_id = run.info.run_id
    assert f"metrics:          {store}, run {run_id} (mlflow)" in result.out
    assert (run.info.run_name, run.info.status) == ("spread", "FINISHED")
    assert run.data.params["train.updates"] == "2"
    assert run.data.params["env.name"] == "cooperative_navigation"
    assert run.data.params["losses"] == "[]"

    evaluations = _evaluations(run_dir)
    assert [update for update, _ in evaluations] == [1, 2]
    history = client.get_metric_history(run_id, "eval_return")
    assert [(m.step, m.value) for m in history] == [
        (update, pytest.approx(mean)) for update, mean in evaluations
    ]
    assert [m.step for m in client.get_metric_history(run_id, "return_team")] == [1, 2]

    assert {artifact.path for artifact in client.list_artifacts(run_id)} == {
        "config.yaml",
        "learning_curve.png",
    }
    curve = Path(client.download_artifacts(run_id, "learning_curve.png", str(tmp_path)))
    assert curve.read_bytes() == (run_dir / "learning_curve.png").read_bytes()
    # The artifacts live in the run folder too.
    assert list((run_dir / "mlartifacts").rglob("learning_curve.png"))

    # --resume continues the same MLflow run; params are write-once, config.yaml is replaced.
    _train(run_cli, "--resume", str(run_dir), "--set", "train.updates=3")
    (again,) = client.search_runs([experiment.experiment_id])
    assert (again.info.run_id, again.info.status) == (run_id, "FINISHED")
    steps = [m.step for m in client.get_metric_history(run_id, "eval_return")]
    assert steps == [1, 2, 3]
    config = yaml.safe_load(
        Path(client.download_artifacts(run_id, "config.yaml", str(tmp_path / "again"))).read_text()
    )
    assert config["train"]["updates"] == 3


def test_a_run_that_stops_early_is_marked_killed_or_failed(tmp_path: Path, offline: Path) -> None:
    """Ctrl-C (KeyboardInterrupt, TrainingInterrupted) and errors leave no run marked running."""
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    store = f"sqlite:///{tmp_path / 'mlflow.db'}"  # one store for both runs: created once
    logging = LoggingSection(backend="mlflow", mlflow={"tracking_uri": store})
    for name, error in [("stopped", KeyboardInterrupt()), ("broken", RuntimeError("boom"))]:
        (tmp_path / name).mkdir()
        with (
            pytest.raises(type(error)),
            open_run_logger(logging, tmp_path / name, keep_before=1) as logger,
        ):
            logger.log_metrics({"return_team": -1.0}, step=1)
            raise error
    client = MlflowClient(tracking_uri=store)
    experiment = client.get_experiment_by_name("marlplug")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert {run.info.run_name: run.info.status for run in runs} == {
        "stopped": "KILLED",
        "broken": "FAILED",
    }
    assert all(run.data.metrics == {"return_team": -1.0} for run in runs)


@pytest.mark.parametrize("backend", ["wandb", "mlflow"])
def test_a_missing_tracker_package_is_one_line_naming_the_extra(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == backend else find_spec(name, *args),
    )
    with pytest.raises(UserError) as raised:
        make_logger(LoggingSection(backend=backend), tmp_path, keep_before=1)
    assert str(raised.value) == (
        f"logging.backend: {backend} needs the {backend} package "
        f"(pip install 'marlplug[{backend}]'); or use csv"
    )
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_backend_is_one_line_listing_them_all(
    run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    result = run_cli(
        "train", "--set", "logging.backend=nonsense", "--set", f"logging.dir={tmp_path / 'runs'}"
    )
    assert result.exit_code == 2
    assert result.err.strip() == (
        "error: logging.backend: input should be 'csv', 'tensorboard', 'wandb' or 'mlflow', "
        "got 'nonsense'"
    )
    assert not (tmp_path / "runs").exists()
