"""``train.max_minutes``: a run out of wall time stops at the next update boundary and ends as a
run ends after ``train.updates`` (checkpoint, final evaluation, the reason in the summary), for PPO
and the replay-based algorithms; a resumed run counts its earlier parts; a sweep records the frames
the run trained.

A budget of 1e-4 minutes (6 ms) is spent by any first iteration on any machine, so every stop
here is after update 1 whatever the machine's speed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from marlplug import load_config
from marlplug.cli.main import main
from marlplug.errors import ConfigError
from marlplug.runs.checkpoint import load_checkpoint
from marlplug.runs.run_config import load_run_config
from marlplug.runs.trained_run import TrainedRun
from marlplug.train.result import TrainResult
from marlplug.train.run import run_training
from marlplug.train.run_state import WALL_SECONDS_KEY
from tests.cli.test_evaluate_run import CODED, MADDPG_RUN
from tests.experiments.test_sweep_cli import marlplug
from tests.train.helpers import SMALL_RUN

TINY_BUDGET = "train.max_minutes=1e-4"
EVALUATED = ["train.eval_every=10", "train.eval_episodes=2", "train.final_eval_episodes=3"]
#: Each of 3 updates: PPO, a replay-based algorithm, and PPO on coded learners (the same loop).
RUNS = {
    "ppo": [*SMALL_RUN, "train.updates=3"],
    "maddpg": MADDPG_RUN,
    "coded": [*SMALL_RUN, "train.updates=3", *CODED],
}


def _train(tmp_path: Path, name: str, overrides: list[str]) -> TrainResult:
    config = load_config(
        overrides=[*overrides, f"logging.dir={tmp_path}", f"logging.run_name={name}"]
    )
    return run_training(config)


@pytest.mark.parametrize("algorithm", ["ppo", "maddpg", "coded"])
def test_a_spent_budget_ends_the_run_after_its_first_update(algorithm: str, tmp_path: Path) -> None:
    result = _train(tmp_path, algorithm, [*RUNS[algorithm], *EVALUATED, TINY_BUDGET])
    assert result.completed == 1 and len(result.iterations) == 1
    assert result.total_frames == result.iterations[0].env_steps > 0
    # The end of a run: the final evaluation (final_eval_episodes, not eval_episodes) ...
    assert [(point.update, point.episodes) for point in result.evaluations] == [(1, 3)]
    # ... the checkpoint, with the wall time spent ...
    trained = TrainedRun.find(result.run_dir)
    assert (trained.updates, trained.frames) == (1, result.total_frames)
    assert load_checkpoint(result.checkpoint)[WALL_SECONDS_KEY] > 0.0
    # ... and why it stopped.
    stops = [note for note in result.notes if note.startswith("stopped at update")]
    assert len(stops) == 1 and stops[0].startswith(
        "stopped at update 1 of 3: train.max_minutes 0.0001 reached ("
    )
    assert result.learning_curve.is_file()


def test_without_a_budget_the_run_goes_to_train_updates(tmp_path: Path) -> None:
    result = _train(tmp_path, "whole", [*RUNS["ppo"], "train.max_minutes=1e6"])
    assert result.completed == 3
    assert not any(note.startswith("stopped at update") for note in result.notes)


def test_train_prints_why_it_stopped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sets = [*RUNS["ppo"], "train.eval_every=0", TINY_BUDGET, f"logging.dir={tmp_path}"]
    assert main(["train", *(f"--set={item}" for item in sets)]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "stopped at update" in line]
    assert len(lines) == 1, out
    assert (
        lines[0].startswith("note:") and "stopped at update 1 of 3: train.max_minutes" in lines[0]
    )


def test_a_resumed_run_counts_the_time_of_its_earlier_parts(tmp_path: Path) -> None:
    first = _train(tmp_path, "run", [*RUNS["ppo"], "train.eval_every=0", TINY_BUDGET])
    assert first.completed == 1
    # The budget was spent before the resume: nothing more to train.
    again = run_training(load_run_config(first.run_dir), resume_dir=first.run_dir)
    assert again.completed == 1 and again.iterations == []
    assert any("before this resume" in note for note in again.notes), again.notes
    # A larger budget goes on, to train.updates.
    more = load_run_config(first.run_dir, ["train.max_minutes=1e6"])
    assert run_training(more, resume_dir=first.run_dir).completed == 3


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "train.max_minutes: input should be greater than 0, got 0"),
        ("-1", "train.max_minutes: input should be greater than 0, got -1"),
        ("twenty", "train.max_minutes: expected a number, got 'twenty'"),
    ],
)
def test_a_bad_budget_is_one_line(value: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(overrides=[f"train.max_minutes={value}"])
    assert str(error.value) == message


def test_a_bad_budget_on_the_command_line_is_status_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["train", "--set", "train.max_minutes=0"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "error: train.max_minutes: input should be greater than 0, got 0"


@pytest.mark.slow
def test_a_sweep_records_the_frames_a_stopped_run_trained(tmp_path: Path) -> None:
    sets = [*RUNS["ppo"], "train.eval_every=0", TINY_BUDGET]
    args = [arg for item in sets for arg in ("--set", item)]
    sweep = marlplug("sweep", "--seeds", "0", "--episodes", "2", *args, cwd=tmp_path)
    assert sweep.returncode == 0, sweep.stderr
    (run,) = json.loads((tmp_path / "sweeps" / "default" / "results.json").read_text())["runs"]
    # One 50-step rollout, not train.updates x train.rollout_steps = 150.
    assert (run["updates"], run["frames"]) == (1, 50)
    log = (tmp_path / "sweeps" / "default" / "logs" / "default-seed-0.log").read_text()
    assert "stopped at update 1 of 3: train.max_minutes 0.0001 reached" in log
