"""What a run reports, the same way for joint PPO and MADDPG, centralized and coded: both returns
(per agent and for the team) in the metrics, rounds log, checkpoint and summary; headered metric
CSVs; one frame count across resumes; resume overrides saved; the MADDPG learning gate reported."""

from __future__ import annotations

import csv
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from marlplug.config import load_config
from marlplug.runs.checkpoint import CHECKPOINT_NAME, load_checkpoint
from marlplug.runs.metrics_files import read_scalar_csv
from marlplug.runs.run_config import load_run_config
from marlplug.runs.stats import history_from_checkpoint
from marlplug.train.orchestrator import run
from marlplug.train.run import run_training
from tests.train.helpers import SMALL_RUN

MADDPG_SMALL = [
    "env.agents=3",
    "algorithm.name=maddpg",
    "algorithm.minibatch_size=8",
    "algorithm.learning_starts=8",
    "algorithm.steps_per_iteration=25",
    "algorithm.hidden_sizes=[8]",
    "logging.progress=false",
    "train.updates=3",
]
#: A coded run on the simulated clock: learners evaluated in this process, no worker processes.
SIMULATED_CODING = ["coding.scheme=mds", "coding.learners=4", "coding.clock=simulated"]


def _scalars(run_dir: Path) -> dict[str, Path]:
    scalars = run_dir / "metrics" / "scalars"
    return {str(path.relative_to(scalars)): path for path in scalars.rglob("*.csv")}


def _assert_team_is_the_sum_over_agents(run_dir: Path, num_agents: int) -> None:
    files = _scalars(run_dir)
    per_agent = read_scalar_csv(files["return_per_agent.csv"])
    team = read_scalar_csv(files["return_team.csv"])
    assert per_agent and [step for step, _ in per_agent] == [step for step, _ in team]
    for (_, mean), (_, total) in zip(per_agent, team, strict=True):
        assert total == pytest.approx(mean * num_agents, rel=1e-6)


def test_every_metrics_csv_has_a_header_row(tmp_path: Path) -> None:
    config = load_config(
        overrides=[
            *SMALL_RUN,
            f"logging.dir={tmp_path}",
            "logging.run_name=a",
            "train.updates=2",
            "train.eval_every=1",  # the evaluation's files too, at every step
            "train.eval_episodes=1",
        ]
    )
    result = run_training(config)
    files = _scalars(result.run_dir)
    assert "agent_0/entropy.csv" in files and "return_team.csv" in files
    for name, path in files.items():
        header, *rows = path.read_text().splitlines()
        assert header == f"step,{Path(name).stem}", name
        assert [row.split(",")[0] for row in rows] == ["1", "2"], name
    with files["total_loss.csv"].open(newline="") as handle:  # a plain CSV reader sees the names
        assert [row["step"] for row in csv.DictReader(handle)] == ["1", "2"]


@pytest.mark.parametrize("coded", [False, True], ids=["centralized", "coded"])
def test_ppo_reports_the_return_per_agent_and_for_the_team(tmp_path: Path, coded: bool) -> None:
    overrides = [*SMALL_RUN, "env.agents=3", f"logging.dir={tmp_path}", "train.updates=2"]
    result = run_training(load_config(overrides=[*overrides, *(SIMULATED_CODING if coded else [])]))
    team = result.iterations[-1].episode_return
    assert team == team  # an episode ended in the last update
    # The team's return sums over the agents; the return per agent is a third of it.
    assert result.history[-1].team == team
    assert result.history[-1].per_agent == pytest.approx(team / 3)
    _assert_team_is_the_sum_over_agents(result.run_dir, 3)
    stored = load_checkpoint(result.checkpoint)["history"]
    assert history_from_checkpoint(stored, num_agents=3, legacy_is_team=False) == result.history


@pytest.mark.parametrize("coded", [False, True], ids=["centralized", "coded"])
def test_maddpg_reports_the_return_per_agent_and_for_the_team(tmp_path: Path, coded: bool) -> None:
    config = load_config(data={}, overrides=[*MADDPG_SMALL, *(SIMULATED_CODING if coded else [])])
    result = run(config, run_dir=tmp_path / "run")
    # The runner sums each episode's rewards over the agents: that is the team's return.
    finished = [
        log.episode_return for log in result.iterations if log.episode_return == log.episode_return
    ]
    assert [point.team for point in result.history] == finished
    assert [point.per_agent for point in result.history] == pytest.approx([r / 3 for r in finished])
    _assert_team_is_the_sum_over_agents(result.run_dir, 3)
    assert result.rounds_csv is not None
    with result.rounds_csv.open(newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["return_team"]]
    assert [float(row["return_team"]) for row in rows] == pytest.approx(finished)
    assert [float(row["return_per_agent"]) for row in rows] == pytest.approx(
        [r / 3 for r in finished]
    )
    assert result.notes == []  # learning started in the first iteration


def test_a_legacy_checkpoint_history_is_read_by_its_runner_s_definition() -> None:
    ppo = history_from_checkpoint([(50, -2.0)], num_agents=2, legacy_is_team=False)
    maddpg = history_from_checkpoint([(50, -2.0)], num_agents=2, legacy_is_team=True)
    assert (ppo[0].per_agent, ppo[0].team) == (-2.0, -4.0)
    assert (maddpg[0].per_agent, maddpg[0].team) == (-1.0, -2.0)


def test_resume_saves_its_overrides_and_counts_frames_across_sessions(
    tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    run_dir = tmp_path / "cli"
    options = [*SMALL_RUN, f"logging.dir={tmp_path}", "logging.run_name=cli", "train.updates=2"]
    first = run_cli("train", *[f"--set={option}" for option in options])
    assert first.exit_code == 0, first.err
    counters = load_checkpoint(run_dir / CHECKPOINT_NAME)["training"]["counters"]
    frames_per_update = counters["env_steps"] // 2

    more = run_cli("train", "--resume", str(run_dir), "--set", "train.updates=3", "--no-progress")
    assert more.exit_code == 0, more.err
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["train"]["updates"] == 3
    assert load_run_config(run_dir).train.updates == 3
    frames = next(line for line in more.out.splitlines() if line.startswith("frames:"))
    assert f" {3 * frames_per_update} ({frames_per_update} in this session, " in frames

    again = run_cli("train", "--resume", str(run_dir), "--set", "logging.progress=true")
    assert again.exit_code == 0, again.err
    assert "3/2" not in again.out and "0 frames/s" not in again.out
    bar = again.out.splitlines()[0]  # the finished bar keeps the run's last return
    assert "3/3 return per agent: " in bar and "(team " in bar
    frames = next(line for line in again.out.splitlines() if line.startswith("frames:"))
    assert (
        f" {3 * frames_per_update} (none in this session: the run had already ended after 3 updates"
        in frames
    )


@pytest.mark.parametrize("coded", [False, True], ids=["centralized", "coded"])
def test_a_maddpg_run_that_never_reaches_learning_starts_says_so(
    tmp_path: Path, coded: bool, run_cli: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    # 3 iterations of 25 steps; learning would start after 100 steps, in iteration 4.
    options = [
        *MADDPG_SMALL,
        "algorithm.learning_starts=100",
        f"logging.dir={tmp_path}",
        "logging.run_name=gated",
        *(SIMULATED_CODING if coded else []),
    ]
    config = tmp_path / "maddpg.yaml"
    config.write_text("seed: 0\n")  # not the packaged default (joint PPO): every field default
    with caplog.at_level(logging.WARNING, logger="marlplug"):
        result = run_cli("train", str(config), *[f"--set={option}" for option in options])
    assert result.exit_code == 0, result.err
    what = "coded round" if coded else "update"
    gate = f"no {what} yet: learning starts after 100 steps (algorithm.learning_starts), at iteration 4"
    assert f"note: {gate}; this run stops at iteration 3" in caplog.text
    notes = [line for line in result.out.splitlines() if line.startswith("note:")]
    assert [note.split(":", 1)[1].strip() for note in notes] == [gate]
    assert not any(line.startswith("timeline:") for line in result.out.splitlines())


def test_the_gate_names_the_minibatch_when_it_is_the_larger(tmp_path: Path) -> None:
    overrides = [*MADDPG_SMALL, "algorithm.minibatch_size=200", "algorithm.learning_starts=10"]
    result = run(load_config(data={}, overrides=overrides), run_dir=tmp_path / "run")
    assert result.notes == [
        "no update yet: learning starts after 200 steps (algorithm.minibatch_size), at iteration 8"
    ]
