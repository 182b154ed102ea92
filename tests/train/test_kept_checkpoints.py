"""``train.keep_checkpoint_every``: the checkpoints of every K-th update stay in
``RUN_DIR/checkpoints/`` beside the latest, each holding the run as it was then, without changing
the run; a resumed run goes on keeping them; and a kept checkpoint is what ``marlplug evaluate``
reads (the self-play opponent of issue 45's battle)."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from marlplug.config import load_config
from marlplug.runs import kept_checkpoints as kept_module
from marlplug.runs.checkpoint import (
    CHECKPOINT_NAME,
    TRAINING_KEY,
    load_checkpoint,
    save_checkpoint,
)
from marlplug.runs.kept_checkpoints import KEPT_DIR, keep_checkpoint
from marlplug.runs.run_config import load_run_config
from marlplug.train.result import TrainResult
from marlplug.train.run import run_training
from tests.train.helpers import SMALL_RUN

#: Checkpoints after updates 3 and 4 (checkpoint_every, the last); kept: 2 and 4.
KEEPING = [*SMALL_RUN, "train.updates=4", "train.checkpoint_every=3", "train.eval_every=0"]


def _train(tmp_path: Path, name: str, overrides: list[str]) -> TrainResult:
    config = load_config(
        overrides=[*overrides, f"logging.dir={tmp_path}", f"logging.run_name={name}"]
    )
    return run_training(config)


def _iterations(path: Path) -> int:
    return int(load_checkpoint(path)[TRAINING_KEY]["counters"]["iterations"])


def _theta(path: Path) -> torch.Tensor:
    return load_checkpoint(path)[TRAINING_KEY]["theta"]


def test_every_kth_update_is_kept_as_it_was_and_the_run_is_unchanged(tmp_path: Path) -> None:
    kept = _train(tmp_path, "kept", [*KEEPING, "train.keep_checkpoint_every=2"])
    plain = _train(tmp_path, "plain", KEEPING)
    folder = kept.run_dir / KEPT_DIR
    assert kept.kept_checkpoints == folder and plain.kept_checkpoints is None
    assert sorted(path.name for path in folder.iterdir()) == [
        "update-000002.pt",
        "update-000004.pt",
    ]
    assert [_iterations(folder / name) for name in ("update-000002.pt", "update-000004.pt")] == [
        2,
        4,
    ]
    # The last one is the latest checkpoint itself (a hard link: no bytes copied) ...
    assert os.path.samefile(folder / "update-000004.pt", kept.run_dir / CHECKPOINT_NAME)
    # ... and update 2's survived the writes of updates 3 and 4 with update 2's weights.
    assert not torch.equal(_theta(folder / "update-000002.pt"), kept.theta)
    # Keeping writes one more checkpoint (update 2) and changes nothing of the run.
    assert torch.equal(kept.theta, plain.theta)
    assert not (plain.run_dir / KEPT_DIR).exists()


def test_a_resumed_run_goes_on_keeping(tmp_path: Path) -> None:
    first = _train(
        tmp_path, "run", [*SMALL_RUN, "train.updates=2", "train.keep_checkpoint_every=1"]
    )
    config = load_run_config(first.run_dir, ["train.updates=3"])
    resumed = run_training(config, resume_dir=first.run_dir)
    names = sorted(path.name for path in (resumed.run_dir / KEPT_DIR).iterdir())
    assert names == ["update-000001.pt", "update-000002.pt", "update-000003.pt"]
    assert _iterations(resumed.run_dir / KEPT_DIR / "update-000003.pt") == 3


def test_a_file_system_without_hard_links_gets_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(source: object, target: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    latest = save_checkpoint(tmp_path / CHECKPOINT_NAME, {"update": 5})
    monkeypatch.setattr(kept_module.os, "link", no_links)
    kept = keep_checkpoint(latest, 5)
    save_checkpoint(latest, {"update": 6})
    assert not os.path.samefile(kept, latest)
    assert load_checkpoint(kept)["update"] == 5 and load_checkpoint(latest)["update"] == 6
    assert [path.name for path in kept.parent.iterdir()] == ["update-000005.pt"]  # no temporaries


def test_train_names_the_folder_and_evaluate_reads_a_kept_checkpoint(
    tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    overrides = [*SMALL_RUN, "train.updates=2", "train.keep_checkpoint_every=1"]
    sets = [arg for override in overrides for arg in ("--set", override)]
    run_dir = tmp_path / "run"
    trained = run_cli(
        "train", *sets, "--set", f"logging.dir={tmp_path}", "--set", "logging.run_name=run"
    )
    assert trained.exit_code == 0, trained.err
    assert f"kept checkpoints: {run_dir / KEPT_DIR}" in trained.out
    report = run_cli("evaluate", str(run_dir / KEPT_DIR / "update-000001.pt"), "--episodes", "1")
    assert report.exit_code == 0, report.err
    assert "1 updates" in report.out  # the kept one, not the latest (2)


def test_a_negative_keep_is_one_line_naming_the_field(run_cli: Callable[..., Any]) -> None:
    config = Path(__file__).parents[2] / "marlplug/configs/battle_64v64.yaml"
    result = run_cli("config", "check", str(config), "--set", "train.keep_checkpoint_every=-1")
    assert result.exit_code == 2
    assert "train.keep_checkpoint_every" in result.err and "Traceback" not in result.err
