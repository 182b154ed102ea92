"""A run resumed from an earlier checkpoint than its last logged step (a crash after the checkpoint)
logs every step of TorchRL's CSV metrics once: rows written after the checkpoint are dropped before
the resumed run logs those steps again. Both algorithms: joint PPO and MADDPG."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from marlplug.config import load_config
from marlplug.runs.checkpoint import CHECKPOINT_NAME
from marlplug.runs.metrics_files import read_scalar_csv
from marlplug.runs.run_config import load_run_config
from marlplug.train import orchestrator
from marlplug.train.run import run_training
from tests.train.helpers import SMALL_RUN

PPO_SMALL = [*SMALL_RUN, "train.checkpoint_every=2", "train.updates=4"]
# 10 env steps per iteration: the first episode (25 steps) ends in iteration 3, so the returns
# (return_per_agent, return_team) have a row at step 3, the one the crashed run logs after its
# checkpoint.
MADDPG_SMALL = [
    "env.agents=2",
    "algorithm.name=maddpg",
    "algorithm.minibatch_size=8",
    "algorithm.learning_starts=8",
    "algorithm.steps_per_iteration=10",
    "algorithm.hidden_sizes=[8]",
    "logging.progress=false",
    "train.checkpoint_every=2",
    "train.updates=4",
]
#: Metrics that are wall-clock times: they differ between any two runs.
TIMINGS = {"collect_s.csv", "update_s.csv"}


def scalar_rows(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Every metrics CSV of a run, by its path under ``metrics/scalars``: its ``(step, value)`` rows."""
    scalars = run_dir / "metrics" / "scalars"
    return {
        str(path.relative_to(scalars)): read_scalar_csv(path)
        for path in sorted(scalars.rglob("*.csv"))
    }


def assert_logged_as_never_stopped(run_dir: Path, straight_dir: Path) -> None:
    """Resume is bit-identical: every metrics file equals that of the run never stopped, row for row
    (the timings, step for step)."""
    logged, straight = scalar_rows(run_dir), scalar_rows(straight_dir)
    assert logged.keys() == straight.keys()
    for name, rows in logged.items():
        if name in TIMINGS:
            assert [step for step, _ in rows] == [step for step, _ in straight[name]], name
        else:
            assert rows == straight[name], name


def crash_after_checkpoint_and_resume(
    run: Callable[[Path | None, int], object], run_dir: Path
) -> None:
    """Run 2 steps (checkpoint at 2), then 1 more (logs step 3, checkpoint at 3), then put back the
    checkpoint of step 2, as if the run had crashed after logging step 3 but before saving it, and
    resume to the configured 4 steps. ``run(resume_dir, steps)`` runs one call of a runner."""
    run(None, 2)
    at_two = run_dir.parent / "at_two.pt"
    shutil.copy(run_dir / CHECKPOINT_NAME, at_two)
    run(run_dir, 3)
    shutil.copy(at_two, run_dir / CHECKPOINT_NAME)
    run(run_dir, 4)


def test_resumed_ppo_logs_every_update_once(tmp_path: Path) -> None:
    options = [*PPO_SMALL, f"logging.dir={tmp_path}"]
    run_training(load_config(overrides=[*options, "logging.run_name=straight"]))
    run_dir = tmp_path / "resumed"

    def run(resume_dir: Path | None, updates: int) -> object:
        if resume_dir is None:
            config = load_config(overrides=[*options, "logging.run_name=resumed"])
            return run_training(config, updates=updates)
        return run_training(load_run_config(resume_dir), resume_dir=resume_dir, updates=updates)

    crash_after_checkpoint_and_resume(run, run_dir)
    logged = scalar_rows(run_dir)
    assert "agent_0/grad_norm.csv" in logged and "return_per_agent.csv" in logged
    assert [step for step, _ in logged["total_loss.csv"]] == [1, 2, 3, 4]
    assert_logged_as_never_stopped(run_dir, tmp_path / "straight")


def test_resumed_maddpg_logs_every_iteration_once(tmp_path: Path) -> None:
    config = load_config(data={}, overrides=MADDPG_SMALL)
    orchestrator.run(config, run_dir=tmp_path / "straight")
    run_dir = tmp_path / "resumed"

    def run(resume_dir: Path | None, iterations: int) -> object:
        if resume_dir is None:
            return orchestrator.run(config, iterations=iterations, run_dir=run_dir)
        return orchestrator.run(
            load_run_config(resume_dir), iterations=iterations, resume_dir=resume_dir
        )

    crash_after_checkpoint_and_resume(run, run_dir)
    logged = scalar_rows(run_dir)
    assert [step for step, _ in logged["env_steps.csv"]] == [1, 2, 3, 4]
    assert [step for step, _ in logged["return_team.csv"]] == [3]
    assert_logged_as_never_stopped(run_dir, tmp_path / "straight")
