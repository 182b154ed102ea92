"""`marlplug train` runs MADDPG (centralized and coded) and coded PPO with checkpoints, and a resumed
run continues exactly where the stopped one was."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from marlplug import load_config
from marlplug.cli.train import default_config_path
from marlplug.coding.stragglers import StragglerModel
from marlplug.errors import UserError
from marlplug.runs.checkpoint import CHECKPOINT_NAME, TRAINING_KEY, load_checkpoint
from marlplug.runs.run_config import load_run_config
from marlplug.train.orchestrator import run
from marlplug.train.run import run_training

# 10 steps per iteration against 25-step episodes: checkpoints fall mid-episode; a 40-transition
# buffer wraps after 4 iterations; the first update round is in iteration 1.
SMALL = [
    "env.agents=3",
    "env.entity_order=world",  # as coded_maddpg.yaml, which a test compares with a config from data
    "algorithm.name=maddpg",
    "algorithm.minibatch_size=16",
    "algorithm.learning_starts=16",
    "algorithm.steps_per_iteration=10",
    "algorithm.buffer_size=40",
    "algorithm.hidden_sizes=[16]",
    "logging.progress=false",
]
CODED = [
    "coding.scheme=mds",
    "coding.learners=5",
    "coding.backend=local",
    "coding.stragglers.count=1",
    "coding.stragglers.delay_s=0.05",
]


def rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "rounds.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def untimed(logged: list[dict[str, str]]) -> list[dict[str, str]]:
    """The rows without what depends on measured times: the times (``collect_s``,
    ``round_wait_s``, ...) and which learners answered first (``round_learners_used``)."""
    timed = ("_s", "_s_max", "_learners_used")
    return [{k: v for k, v in row.items() if not k.endswith(timed)} for row in logged]


def runner_state(run_dir: Path) -> dict[str, Any]:
    state: dict[str, Any] = load_checkpoint(run_dir / CHECKPOINT_NAME)[TRAINING_KEY]
    return state


def test_centralized_resume_is_bit_identical_to_a_run_never_stopped(tmp_path: Path) -> None:
    config = load_config(data={}, overrides=[*SMALL, "train.updates=6", "train.checkpoint_every=2"])
    straight = run(config, run_dir=tmp_path / "straight")
    # Stopped after 3 iterations (30 steps: one episode done, 5 steps into the next) ...
    run(config, iterations=3, run_dir=tmp_path / "stopped")
    assert runner_state(tmp_path / "stopped")["counters"]["iterations"] == 3
    # ... and resumed from its own folder to the configured 6.
    resumed = run(load_run_config(tmp_path / "stopped"), resume_dir=tmp_path / "stopped")
    assert [log.iteration for log in resumed.iterations] == [3, 4, 5]
    assert torch.equal(resumed.theta, straight.theta)
    assert resumed.history == straight.history
    before, after = runner_state(tmp_path / "straight"), runner_state(tmp_path / "stopped")
    assert torch.equal(
        before["source"]["collector"]["transitions"]["obs"],
        after["source"]["collector"]["transitions"]["obs"],
    )
    assert before["source"]["collector"]["writer"] == after["source"]["collector"]["writer"]
    assert [row["iteration"] for row in rows(tmp_path / "stopped")] == [str(i) for i in range(6)]
    assert (tmp_path / "stopped" / "learning_curve.png").stat().st_size > 1000
    assert not (tmp_path / "stopped" / "timeline.png").exists()


def test_train_cli_runs_coded_maddpg_and_resumes_it(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    options = [
        *SMALL,
        *CODED,
        f"logging.dir={tmp_path}",
        "logging.run_name=coded",
        "train.checkpoint_every=1",
    ]
    example = default_config_path().with_name("coded_maddpg.yaml")  # the documented example config
    result = run_cli(
        "train", str(example), *(f"--set={option}" for option in options), "--set=train.updates=2"
    )
    assert result.exit_code == 0, result.err
    run_dir = tmp_path / "coded"
    for line in ("rounds log:", "timeline:", "checkpoint:", "learning curve:", "resume with:"):
        assert line in result.out
    for name in (
        "rounds.csv",
        "timeline.png",
        CHECKPOINT_NAME,
        "learning_curve.png",
        "config.yaml",
    ):
        assert (run_dir / name).stat().st_size > 0, name
    assert (run_dir / "metrics").is_dir()
    assert len(rows(run_dir)) == 2

    result = run_cli("train", "--resume", str(run_dir), "--set", "train.updates=4")
    assert result.exit_code == 0, result.err
    logged = rows(run_dir)
    assert [row["iteration"] for row in logged] == ["0", "1", "2", "3"]
    assert [row["round"] for row in logged] == ["", "0", "1", "2"]  # iteration 0 only collected
    coded_rounds = [row for row in logged if row["round_learners_used"]]
    assert len(coded_rounds) == 3
    for row in coded_rounds:
        assert len(row["round_learners_used"].split()) >= 3
        assert float(row["round_wait_s"]) > 0 and float(row["round_decode_s"]) > 0
    # The resumed run met the same stragglers a run never stopped would have.
    model = StragglerModel(count=1, delay_s=0.05, seed=0)
    expected = [[j for j, d in model.delays(range(5)).items() if d > 0] for _ in coded_rounds]
    assert [[int(j) for j in row["round_stragglers"].split()] for row in coded_rounds] == expected

    # And it reached the parameters of an uninterrupted centralized run (decoding round-off only).
    centralized = run(
        load_config(data={}, overrides=[*SMALL, "train.updates=4"]),
        run_dir=tmp_path / "centralized",
    )
    theta = runner_state(run_dir)["theta"]
    assert float((theta - centralized.theta).norm() / centralized.theta.norm()) <= 1e-5


def test_resumed_coded_ppo_meets_the_same_stragglers_and_ends_bit_identical(
    tmp_path: Path,
) -> None:
    # 2 coded rounds per update (20 frames in minibatches of 10); the simulated clock runs the
    # learners in this process.
    options = [
        "env.agents=3",
        "algorithm.hidden_size=16",
        "algorithm.feature_dim=16",
        "train.rollout_steps=20",
        "train.minibatch_size=10",
        "train.n_epochs=1",
        "train.checkpoint_every=1",
        "logging.progress=false",
        *CODED,
        "coding.clock=simulated",
    ]
    straight = run_training(
        load_config(
            default_config_path(), [*options, f"logging.dir={tmp_path}", "logging.run_name=a"]
        ),
        updates=4,
    )
    run_dir = tmp_path / "b"
    run_training(
        load_config(
            default_config_path(), [*options, f"logging.dir={tmp_path}", "logging.run_name=b"]
        ),
        updates=2,
    )
    # Update 2's rows as a crash before its checkpoint leaves them: the resume drops and redoes them.
    unsaved = [{**row, "iteration": "2", "round_stragglers": "9"} for row in rows(run_dir)[-2:]]
    with (run_dir / "rounds.csv").open("a", newline="") as handle:
        csv.DictWriter(handle, fieldnames=list(unsaved[0])).writerows(unsaved)
    resumed = run_training(load_run_config(run_dir), resume_dir=run_dir, updates=4)
    assert [log.iteration for log in resumed.iterations] == [2, 3]
    assert torch.equal(resumed.theta, straight.theta)
    assert torch.equal(resumed.opt_state, straight.opt_state)
    # Rounds 4..7 met the stragglers a run never stopped met (one draw per round, one row each).
    model = StragglerModel(count=1, delay_s=0.05, seed=0)
    draws = [sorted(j for j, d in model.delays(range(5)).items() if d > 0) for _ in range(8)]
    stragglers = [[int(j) for j in row["round_stragglers"].split()] for row in rows(run_dir)]
    assert stragglers == draws
    # The rounds log is the never-stopped run's, row for row (times aside: they are measured).
    assert untimed(rows(run_dir)) == untimed(rows(tmp_path / "a"))
    assert [row["iteration"] for row in rows(run_dir)] == [str(i // 2) for i in range(8)]
    assert [row["round"] for row in rows(run_dir)] == [str(i) for i in range(8)]


def test_a_checkpoint_of_an_earlier_marlplug_is_a_one_line_error(tmp_path: Path) -> None:
    config = load_config(data={}, overrides=[*SMALL, "train.updates=2"])
    run(config, iterations=1, run_dir=tmp_path / "old")
    path = tmp_path / "old" / CHECKPOINT_NAME
    state = torch.load(path, weights_only=True)
    state["maddpg_runner"] = state.pop(TRAINING_KEY)  # the layout MaddpgRunner wrote
    torch.save(state, path)
    with pytest.raises(UserError, match="written by an earlier marlplug"):
        run(load_run_config(tmp_path / "old"), resume_dir=tmp_path / "old")
