"""Loading a checkpoint never runs code from it: `train --resume` and `render --checkpoint` refuse a
crafted pickle before anything in it runs, and every foreign or unfit file is one line, exit 2."""

from __future__ import annotations

import builtins
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from marlplug import load_config
from marlplug.errors import UserError
from marlplug.runs.checkpoint import (
    CHECKPOINT_NAME,
    FORMAT,
    FORMAT_KEY,
    TRAINING_KEY,
    check_plain,
    load_checkpoint,
    save_checkpoint,
)
from marlplug.runs.run_config import load_run_config
from marlplug.train.orchestrator import run
from marlplug.train.run import run_training
from tests.train.helpers import SMALL_RUN


class TouchWithShell:
    """Unpickling this runs ``touch PATH`` through the shell."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.path}",))


class TouchWithOpen:
    """Unpickling this creates ``PATH`` with ``open``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (builtins.open, (str(self.path), "w"))


def _crafted_files(folder: Path, touched: Path) -> dict[str, Path]:
    """Malicious checkpoints in both containers torch.load reads: its zip format and a raw pickle."""
    files = {}
    for name, payload in {
        "shell": TouchWithShell(touched),
        "open": TouchWithOpen(touched),
    }.items():
        zipped = folder / f"{name}.pt"
        torch.save({FORMAT_KEY: FORMAT, "trainer": payload, "rng": {}}, zipped)
        files[f"{name}-zip"] = zipped
        raw = folder / f"{name}.pkl"
        raw.write_bytes(pickle.dumps({"trainer": payload}))
        files[f"{name}-pickle"] = raw
    return files


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 1-update PPO run (2 agents)."""
    folder = tmp_path_factory.mktemp("ppo")
    config = load_config(
        overrides=[*SMALL_RUN, "train.updates=1", f"logging.dir={folder}", "logging.run_name=run"]
    )
    return run_training(config).run_dir


def _copy_run(run_dir: Path, to: Path) -> Path:
    shutil.copytree(run_dir, to, ignore=shutil.ignore_patterns(".lock"))
    return to


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_resume_never_runs_code_from_a_crafted_checkpoint(
    ppo_run: Path, tmp_path: Path, run_cli: Any
) -> None:
    touched = tmp_path / "pwned"
    for name, crafted in _crafted_files(tmp_path, touched).items():
        run_dir = _copy_run(ppo_run, tmp_path / f"run-{name}")
        shutil.copy(crafted, run_dir / CHECKPOINT_NAME)
        result = run_cli("train", "--resume", str(run_dir), "--no-progress")
        assert result.exit_code == 2, name
        line = _one_line(result.err)
        assert "is not a marlplug checkpoint" in line and "--resume" in line, line
        assert not touched.exists(), f"{name}: loading the checkpoint ran its code"


def test_render_never_runs_code_from_a_crafted_checkpoint(
    ppo_run: Path, tmp_path: Path, run_cli: Any
) -> None:
    touched = tmp_path / "pwned"
    config = ppo_run / "config.yaml"
    for name, crafted in _crafted_files(tmp_path, touched).items():
        result = run_cli(
            "render", str(config), "--checkpoint", str(crafted), "--out", str(tmp_path / "e.gif")
        )
        assert result.exit_code == 2, name
        line = _one_line(result.err)
        assert line.startswith("error: --checkpoint: ") and str(crafted) in line, line
        assert not touched.exists(), f"{name}: loading the checkpoint ran its code"
        assert not (tmp_path / "e.gif").exists()


def test_the_refusal_names_what_the_file_would_have_run(tmp_path: Path) -> None:
    crafted = _crafted_files(tmp_path, tmp_path / "pwned")["shell-zip"]
    with pytest.raises(UserError, match=r"refers to '(posix|os)\.system'"):
        load_checkpoint(crafted)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({}, "is not a marlplug checkpoint (no 'marlplug-checkpoint/1' mark"),
        (
            {"trainer": {"loss": {}}},
            "is not a marlplug checkpoint (no 'marlplug-checkpoint/1' mark",
        ),
        ({FORMAT_KEY: FORMAT, "rng": {}}, "no 'training' entry"),
        # A joint-trainer checkpoint of marlplug 0.1: its rows have another layout.
        (
            {FORMAT_KEY: FORMAT, "trainer": {"update_index": 1}, "model": {}, "rng": {}},
            "was written by an earlier marlplug (no 'training' entry) and cannot be resumed",
        ),
        ({FORMAT_KEY: FORMAT, "training": 5, "rng": {}}, "does not fit this config"),
        (
            {FORMAT_KEY: FORMAT, "trainer": Path("x"), "rng": {}},
            "refers to 'pathlib.",
        ),
        ([1, 2, 3], "is not a marlplug checkpoint (no"),
        # Written by marlplug before checkpoints were plain data (numpy arrays in the RNG state).
        ({"trainer": {}, "rng": {"numpy": np.zeros(3)}}, "is not a marlplug checkpoint: it refers"),
    ],
    ids=[
        "empty",
        "no-mark",
        "no-training",
        "joint-trainer",
        "training-not-a-dict",
        "foreign-object",
        "list",
        "old",
    ],
)
def test_foreign_checkpoints_are_one_line(
    ppo_run: Path, tmp_path: Path, run_cli: Any, content: object, expected: str
) -> None:
    run_dir = _copy_run(ppo_run, tmp_path / "run")
    torch.save(content, run_dir / CHECKPOINT_NAME)
    result = run_cli("train", "--resume", str(run_dir), "--no-progress")
    assert result.exit_code == 2
    assert expected in _one_line(result.err)


@pytest.mark.parametrize("content", [b"", b"not a checkpoint", b"PK\x03\x04truncated zip"])
def test_unreadable_files_are_one_line(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.pt"
    path.write_bytes(content)
    with pytest.raises(UserError, match=r"^--resume: .* is not a marlplug checkpoint") as caught:
        load_checkpoint(path)
    assert "\n" not in str(caught.value)


def test_resuming_with_another_agent_count_names_the_mismatch(
    ppo_run: Path, tmp_path: Path, run_cli: Any
) -> None:
    run_dir = _copy_run(ppo_run, tmp_path / "run")
    result = run_cli("train", "--resume", str(run_dir), "--set", "env.agents=3", "--no-progress")
    assert result.exit_code == 2
    line = _one_line(result.err)
    assert "trained with 2 agents (agent_0, agent_1)" in line, line
    assert "this config builds 3 (agent_0, agent_1, agent_2)" in line, line


def test_resuming_with_other_network_sizes_names_the_first_mismatch(
    ppo_run: Path, tmp_path: Path, run_cli: Any
) -> None:
    run_dir = _copy_run(ppo_run, tmp_path / "run")
    result = run_cli(
        "train", "--resume", str(run_dir), "--set", "algorithm.hidden_size=32", "--no-progress"
    )
    assert result.exit_code == 2
    line = _one_line(result.err)
    assert "does not fit this config (size mismatch for the agents' parameters: " in line, line
    assert "(agents, values per agent) in the checkpoint" in line, line


def test_rendering_with_other_network_sizes_names_the_changed_field(
    ppo_run: Path, tmp_path: Path, run_cli: Any
) -> None:
    result = run_cli(
        "render",
        str(ppo_run / "config.yaml"),
        "--checkpoint",
        str(ppo_run / CHECKPOINT_NAME),
        "--set",
        "algorithm.hidden_size=32",
        "--out",
        str(tmp_path / "e.gif"),
    )
    assert result.exit_code == 2
    line = _one_line(result.err)
    assert line.startswith("error: --checkpoint: ") and "does not fit this config" in line, line
    assert "changed since it was written: algorithm.hidden_size: 16 -> 32" in line, line
    assert not (tmp_path / "e.gif").exists()


def test_maddpg_resume_with_another_agent_count_is_one_line(tmp_path: Path, run_cli: Any) -> None:
    config = load_config(
        data={},
        overrides=[
            "env.agents=2",
            "algorithm.name=maddpg",
            "algorithm.minibatch_size=8",
            "algorithm.learning_starts=8",
            "algorithm.steps_per_iteration=5",
            "algorithm.buffer_size=20",
            "algorithm.hidden_sizes=[8]",
            "logging.progress=false",
            "train.updates=2",
        ],
    )
    result = run(config, run_dir=tmp_path / "m")
    assert TRAINING_KEY in load_checkpoint(result.run_dir / CHECKPOINT_NAME)
    resumed = run_cli("train", "--resume", str(result.run_dir), "--set", "env.agents=3")
    assert resumed.exit_code == 2
    assert "trained with 2 agents" in _one_line(resumed.err)


def test_checkpoints_hold_plain_data_only(ppo_run: Path) -> None:
    # What weights_only loading accepts: the whole file, RNG states included, reads back.
    state = load_checkpoint(ppo_run / CHECKPOINT_NAME)
    check_plain(state)
    assert state[FORMAT_KEY] == FORMAT
    # A component whose state grows a foreign object fails when saving, naming where it is.
    with pytest.raises(TypeError, match=r"checkpoint\['trainer'\]\['extra'\] is a numpy.ndarray"):
        save_checkpoint(ppo_run / "other.pt", {"trainer": {"extra": np.zeros(2)}})
    assert not (ppo_run / "other.pt").exists()


def test_resume_restores_the_numpy_rng_state(tmp_path: Path) -> None:
    np.random.seed(3)
    expected = np.random.get_state()
    save_checkpoint(tmp_path / CHECKPOINT_NAME, {"trainer": {}})
    np.random.seed(4)
    from marlplug.runs.checkpoint import restore_rng_states

    restore_rng_states(load_checkpoint(tmp_path / CHECKPOINT_NAME)["rng"])
    restored = np.random.get_state()
    assert restored[0] == expected[0] and np.array_equal(restored[1], expected[1])
    assert restored[2:] == expected[2:]


def test_load_run_config_of_a_resumed_folder_is_unchanged(ppo_run: Path) -> None:
    assert load_run_config(ppo_run).env.options.model_dump()["agents"] == 2
