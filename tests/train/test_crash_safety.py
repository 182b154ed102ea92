"""Crash safety of `marlplug train`: SIGKILL anywhere (also mid-checkpoint) then `--resume` ends
bit-identical to a run never stopped; Ctrl-C checkpoints the last completed update and exits 130;
a full or read-only logging dir is one line and keeps the last good checkpoint."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from marlplug import load_config
from marlplug.runs import checkpoint as checkpoint_module
from marlplug.runs.checkpoint import CHECKPOINT_NAME, load_checkpoint
from marlplug.runs.metrics_files import read_scalar_csv
from marlplug.runs.run_config import load_run_config
from marlplug.runs.run_folder import LOCK_NAME
from marlplug.train.run import run_training
from tests.train.helpers import SMALL_RUN

DRIVER = Path(__file__).with_name("crash_driver.py")
REPO = Path(__file__).resolve().parents[2]
#: 48 updates, a checkpoint every 2: most kills land between checkpoints, so the resumed run redoes
#: updates whose metrics rows were already written.
CRASH_RUN = [*SMALL_RUN, "train.updates=48", "train.checkpoint_every=2"]


def _assert_same(a: Any, b: Any, where: str = "checkpoint") -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            _assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{where}[{index}]")
    else:
        assert a == b, where


#: Metrics that are wall-clock times: they differ between any two runs (compared step by step).
TIMINGS = {"collect_s.csv", "update_s.csv"}


def _metrics(run_dir: Path) -> dict[str, list[tuple[int, float]] | list[int]]:
    """Every metrics CSV's rows by file name; a timing's steps only."""
    scalars = run_dir / "metrics" / "scalars"
    rows = {
        str(path.relative_to(scalars)): read_scalar_csv(path) for path in scalars.rglob("*.csv")
    }
    return {
        name: [step for step, _ in values] if name in TIMINGS else values
        for name, values in sorted(rows.items())
    }


def _iterations(state: dict[str, Any]) -> int:
    """The updates a checkpoint has done."""
    return int(state["training"]["counters"]["iterations"])


def _subprocess_env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }


@pytest.mark.slow  # 20 kills and resumes: ~30-60 s on a busy 2-core machine
def test_sigkill_anywhere_then_resume_ends_bit_identical(tmp_path: Path) -> None:
    spec = {
        "config": [],
        "overrides": CRASH_RUN,
        "logging_dir": str(tmp_path),
        "kills": 20,
        "mid_write_every": 4,  # every 4th attempt dies halfway through writing a checkpoint
        "delay_s": [0.2, 1.0],
        "max_progress": 2,  # updates an attempt may log: 20 attempts never finish 48 updates
        "seed": 11,
        "timeout_s": 120,
    }
    completed = subprocess.run(
        [sys.executable, str(DRIVER), json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=600,
        env=_subprocess_env(),
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = json.loads(completed.stdout.splitlines()[-1])
    logs = tmp_path / "logs"

    def log_of(name: str) -> str:
        return (logs / f"{name}.log").read_text()[-2000:]

    assert report["straight"] == 0, log_of("straight")
    attempts = report["attempts"]
    for index, attempt in enumerate(attempts):
        # Killed (by the driver or by itself mid-write) or, at most once, done before the kill:
        # never a failed resume.
        assert attempt["status"] in (-signal.SIGKILL, 0), (index, log_of(f"attempt-{index}"))
    if attempts[-1]["status"] != 0:
        assert report["final"] == 0, log_of("final")
    mid_writes = [a for a in attempts if a["mode"] == "mid-write"]
    assert mid_writes and all(a["status"] == -signal.SIGKILL for a in mid_writes)
    # A kill mid-write leaves half a temporary checkpoint; the next start removes it.
    assert any(a["temporaries_after"] for a in mid_writes), mid_writes
    assert report["temporaries_at_end"] == []

    straight, crashed = tmp_path / "straight", tmp_path / "crashed"
    a = load_checkpoint(straight / CHECKPOINT_NAME)
    b = load_checkpoint(crashed / CHECKPOINT_NAME)
    assert _iterations(a) == _iterations(b) == 48
    for key in ("training", "history", "agents"):
        _assert_same(a[key], b[key], key)
    # Every update is logged once, with the values of the run never stopped.
    assert _metrics(crashed) == _metrics(straight)


def _wait_for(predicate: Any, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _logged_updates(run_dir: Path) -> int:
    path = run_dir / "metrics" / "scalars" / "total_loss.csv"
    return len(read_scalar_csv(path)) if path.exists() else 0


def test_ctrl_c_checkpoints_the_last_completed_update_and_exits_130(tmp_path: Path) -> None:
    # No checkpoint before update 1000: only the interrupt writes one.
    args = [f"--set={o}" for o in [*SMALL_RUN, "train.updates=1000", "train.checkpoint_every=1000"]]
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "marlplug.cli.main",
            "train",
            *args,
            "--no-progress",
            f"--set=logging.dir={tmp_path}",
            "--set=logging.run_name=r",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_subprocess_env(),
    )
    run_dir = tmp_path / "r"
    try:
        _wait_for(lambda: _logged_updates(run_dir) >= 2 or process.poll() is not None)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=300)
    finally:
        process.kill()
    assert process.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("interrupted after update "), err
    update = int(lines[0].split()[3].rstrip(":"))
    state = load_checkpoint(run_dir / CHECKPOINT_NAME)
    # The checkpoint holds the last completed update, the last one logged.
    assert _iterations(state) == update == _logged_updates(run_dir) >= 2
    assert f"marlplug train --resume {run_dir}" in lines[0]
    assert "Traceback" not in err and out == ""


@pytest.mark.slow  # starts 3 learner processes
def test_ctrl_c_in_a_terminal_stops_a_coded_maddpg_run_with_its_checkpoint(tmp_path: Path) -> None:
    """Ctrl-C in a terminal signals the whole process group: the driver and its learners."""
    from marlplug.configs import default_config_path

    sets = [
        "env.agents=2",
        "algorithm.minibatch_size=8",
        "algorithm.learning_starts=8",
        "algorithm.steps_per_iteration=5",
        "algorithm.buffer_size=20",
        "algorithm.hidden_sizes=[8]",
        "train.updates=100000",
        "train.checkpoint_every=100000",
        "coding.learners=3",
        "coding.stragglers.count=0",
        f"logging.dir={tmp_path}",
        "logging.run_name=r",
    ]
    config = default_config_path().with_name("coded_maddpg.yaml")
    process = subprocess.Popen(
        [sys.executable, "-m", "marlplug.cli.main", "train", str(config), "--no-progress"]
        + [f"--set={s}" for s in sets],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_subprocess_env(),
        start_new_session=True,
    )
    rounds = tmp_path / "r" / "rounds.csv"

    def iterations_logged() -> int:
        return len(rounds.read_text().splitlines()) - 1 if rounds.exists() else 0

    try:
        _wait_for(lambda: iterations_logged() >= 4 or process.poll() is not None)
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=300)
    finally:
        process.kill()
    assert process.returncode == 130, err
    # The start may note that learning waits for the replay warm-up; the interrupt is the one error.
    lines = [line for line in err.strip().splitlines() if not line.startswith("note: ")]
    assert len(lines) == 1 and lines[0].startswith("interrupted after update "), err
    iteration = int(lines[0].split()[3].rstrip(":"))
    state = load_checkpoint(tmp_path / "r" / CHECKPOINT_NAME)
    assert _iterations(state) == iteration == iterations_logged() >= 4


def _resume_in_subprocess(run_dir: Path, **limits: Any) -> subprocess.CompletedProcess[str]:
    def limit_file_size() -> None:
        # A write past RLIMIT_FSIZE fails with EFBIG instead of killing the process (SIGXFSZ):
        # a full disk, as the process sees it, that holds for root too.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        if "max_file_bytes" in limits:
            size = limits["max_file_bytes"]
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return subprocess.run(
        [
            sys.executable,
            "-m",
            "marlplug.cli.main",
            "train",
            "--resume",
            str(run_dir),
            "--set=train.updates=4",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=_subprocess_env(),
        preexec_fn=limit_file_size,
        check=False,
    )


def _two_update_run(tmp_path: Path) -> Path:
    config = load_config(
        overrides=[*SMALL_RUN, "train.updates=2", f"logging.dir={tmp_path}", "logging.run_name=r"]
    )
    return run_training(config).run_dir


def test_a_full_disk_is_one_line_and_keeps_the_last_good_checkpoint(tmp_path: Path) -> None:
    run_dir = _two_update_run(tmp_path)
    good = (run_dir / CHECKPOINT_NAME).read_bytes()
    # Files may not grow past a quarter of the checkpoint: the next checkpoint cannot be written.
    result = _resume_in_subprocess(run_dir, max_file_bytes=len(good) // 4)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: logging.dir: cannot write"), (
        result.stderr
    )
    assert "File too large" in lines[0] and "last good checkpoint is kept" in lines[0]
    assert (run_dir / CHECKPOINT_NAME).read_bytes() == good
    assert _iterations(load_checkpoint(run_dir / CHECKPOINT_NAME)) == 2
    assert not list(run_dir.glob(".checkpoint.pt-*"))
    # With space again, the run continues from the kept checkpoint.
    assert _resume_in_subprocess(run_dir).returncode == 0


@pytest.mark.skipif(
    os.geteuid() == 0, reason="root writes to read-only folders (see the EROFS test)"
)
def test_a_read_only_run_folder_is_one_line(tmp_path: Path) -> None:
    run_dir = _two_update_run(tmp_path)
    good = (run_dir / CHECKPOINT_NAME).read_bytes()
    modes = {path: path.stat().st_mode for path in [run_dir, *run_dir.rglob("*")] if path.is_dir()}
    for path in modes:
        path.chmod(0o555)
    try:
        result = _resume_in_subprocess(run_dir)
    finally:
        for path, mode in modes.items():
            path.chmod(mode)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert (run_dir / CHECKPOINT_NAME).read_bytes() == good


def test_a_read_only_file_system_is_one_line_and_keeps_the_checkpoint(
    tmp_path: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file system turns read-only between two checkpoints (EROFS at the checkpoint write)."""
    run_dir = _two_update_run(tmp_path)
    good = (run_dir / CHECKPOINT_NAME).read_bytes()

    def read_only(path: Path, write: Any) -> Path:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    monkeypatch.setattr(checkpoint_module, "write_atomically", read_only)
    result = run_cli("train", "--resume", str(run_dir), "--set", "train.updates=4", "--no-progress")
    assert result.exit_code == 2
    assert result.err.strip().splitlines() == [
        f"error: logging.dir: cannot write {run_dir / CHECKPOINT_NAME} "
        f"(Read-only file system); the last good checkpoint is kept: {run_dir / CHECKPOINT_NAME}"
    ]
    assert (run_dir / CHECKPOINT_NAME).read_bytes() == good
    assert not list(run_dir.glob(".checkpoint.pt-*"))


def test_a_run_killed_before_its_first_checkpoint_resumes_from_the_start(tmp_path: Path) -> None:
    config = load_config(
        overrides=[*SMALL_RUN, "train.updates=2", f"logging.dir={tmp_path}", "logging.run_name=a"]
    )
    straight = run_training(config)
    # A run that got as far as writing its config, and a half-written checkpoint, before dying.
    crashed = tmp_path / "b"
    crashed.mkdir()
    (crashed / "config.yaml").write_bytes((straight.run_dir / "config.yaml").read_bytes())
    (crashed / ".checkpoint.pt-ab12cd34").write_bytes(b"half")
    resumed = run_training(load_run_config(crashed), resume_dir=crashed)
    a = load_checkpoint(straight.checkpoint)
    b = load_checkpoint(resumed.checkpoint)
    _assert_same(a["training"], b["training"])
    assert not (crashed / ".checkpoint.pt-ab12cd34").exists()
    assert (crashed / LOCK_NAME).exists()
