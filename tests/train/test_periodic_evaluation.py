"""``train.eval_every`` / ``train.eval_episodes``: deterministic evaluations logged to the metrics,
drawn on the learning curve and reported in the summary, without changing training by one bit
(PPO and MADDPG; resumed runs too); ``train.eval_envs`` copies at once."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from marlplug import load_config
from marlplug.plugins import get_component
from marlplug.runs.checkpoint import EVALUATIONS_KEY, load_checkpoint
from marlplug.runs.metrics_files import read_scalar_csv
from marlplug.runs.summary import summary_lines
from marlplug.testing import register_plugin
from marlplug.train.evaluation import PeriodicEvaluation
from marlplug.train.result import TrainResult
from marlplug.train.run import run_training
from tests.cli.test_evaluate_run import MADDPG_RUN
from tests.train import protocol_plugin
from tests.train.helpers import SMALL_RUN

RUNS = {"ppo": [*SMALL_RUN, "train.updates=3"], "maddpg": MADDPG_RUN}


def _train(tmp_path: Path, name: str, overrides: list[str], **kwargs: object) -> TrainResult:
    config = load_config(
        overrides=[*overrides, f"logging.dir={tmp_path}", f"logging.run_name={name}"]
    )
    return run_training(config, **kwargs)  # type: ignore[arg-type]


def _summary(result: TrainResult) -> list[str]:
    return summary_lines(result, run_dir=result.run_dir, metrics="m", outputs=[])


@pytest.mark.parametrize("algorithm", ["ppo", "maddpg"])
def test_evaluation_does_not_change_training(algorithm: str, tmp_path: Path) -> None:
    evaluated = _train(
        tmp_path, "evaluated", [*RUNS[algorithm], "train.eval_every=1", "train.eval_episodes=2"]
    )
    plain = _train(tmp_path, "plain", [*RUNS[algorithm], "train.eval_every=0"])
    assert torch.equal(evaluated.theta, plain.theta)
    assert torch.equal(evaluated.opt_state, plain.opt_state)
    assert evaluated.history == plain.history
    assert [point.update for point in evaluated.evaluations] == [1, 2, 3]
    assert (
        plain.evaluations == [] and not (plain.metrics_dir / "scalars" / "eval_return.csv").exists()
    )
    assert not any(line.startswith("evaluation") for line in _summary(plain))


def test_evaluations_are_logged_drawn_and_summarized(tmp_path: Path) -> None:
    result = _train(tmp_path, "ppo", [*RUNS["ppo"], "train.eval_every=2", "train.eval_episodes=2"])
    # Every eval_every updates and after the last one.
    assert [point.update for point in result.evaluations] == [2, 3]
    scalars = result.metrics_dir / "scalars"
    returns = read_scalar_csv(scalars / "eval_return.csv")
    assert returns == [(point.update, pytest.approx(point.mean)) for point in result.evaluations]
    assert [step for step, _ in read_scalar_csv(scalars / "eval_return_std.csv")] == [2, 3]
    scores = read_scalar_csv(scalars / "eval_score.csv")  # cooperative navigation has an oracle
    assert [step for step, _ in scores] == [2, 3]
    final = result.final_evaluation
    assert final is not None and final.episodes == 2 and final.score is not None
    assert final.frames == result.total_frames
    lines = _summary(result)
    evaluation = next(line for line in lines if line.startswith("evaluation, team:"))
    assert (
        f"{final.mean:.3f} ± {final.std:.3f} (2 deterministic mpe episodes after update 3"
        in evaluation
    )
    assert "oracle-normalized score" in evaluation
    assert result.learning_curve.stat().st_size > 0


def test_the_last_evaluation_takes_final_eval_episodes(tmp_path: Path) -> None:
    overrides = ["train.eval_every=1", "train.eval_episodes=1", "train.final_eval_episodes=3"]
    result = _train(tmp_path, "final", [*RUNS["ppo"], *overrides])
    assert [point.episodes for point in result.evaluations] == [1, 1, 3]
    final = result.final_evaluation
    assert final is not None and final.score is not None
    # The score is against the references of the same 3 episodes, which `marlplug evaluate
    # --episodes 3` measures too.
    same = _train(tmp_path, "three", [*RUNS["ppo"], "train.eval_every=3", "train.eval_episodes=3"])
    assert same.final_evaluation == final


def test_a_scenario_without_an_oracle_has_no_score(tmp_path: Path) -> None:
    overrides = [*RUNS["maddpg"], "env.name=keep_away", "train.eval_episodes=1"]
    result = _train(tmp_path, "keep", [item for item in overrides if item != "env.agents=2"])
    assert result.final_evaluation is not None and result.final_evaluation.score is None
    assert not (result.metrics_dir / "scalars" / "eval_score.csv").exists()


def test_resumed_run_evaluates_as_one_never_stopped(tmp_path: Path) -> None:
    overrides = [*RUNS["ppo"], "train.eval_every=1", "train.eval_episodes=2"]
    whole = _train(tmp_path, "whole", overrides)
    first = _train(tmp_path, "parts", overrides, updates=2)
    stored = load_checkpoint(first.checkpoint)[EVALUATIONS_KEY]
    assert [entry["update"] for entry in stored] == [1, 2]
    config = load_config(first.run_dir / "config.yaml")
    resumed = run_training(config, resume_dir=first.run_dir)
    assert torch.equal(resumed.theta, whole.theta)
    assert resumed.evaluations == whole.evaluations
    steps = read_scalar_csv(resumed.metrics_dir / "scalars" / "eval_return.csv")
    assert [step for step, _ in steps] == [1, 2, 3]


def test_an_algorithm_that_cannot_act_trains_without_evaluation(tmp_path: Path) -> None:
    overrides = [
        "env.agents=2",
        "algorithm.name=reward_regression",  # tests/train/protocol_plugin.py: no acting policy
        "algorithm.steps_per_iteration=12",
        "train.updates=2",
        "train.eval_every=1",
        "logging.progress=false",
    ]
    with register_plugin(protocol_plugin, name="test-protocol-algorithm"):
        result = _train(tmp_path, "regression", overrides)
    assert result.completed == 2 and result.evaluations == []
    assert any("has no acting policy" in note for note in result.notes), result.notes


def test_eval_envs_runs_rounds_of_copies_and_evaluate_agrees(
    tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    evaluation = ["train.eval_every=3", "train.eval_episodes=4"]
    batched = _train(tmp_path, "batched", [*RUNS["ppo"], *evaluation, "train.eval_envs=3"])
    one = _train(tmp_path, "one", [*RUNS["ppo"], *evaluation])
    assert torch.equal(batched.theta, one.theta)  # evaluation leaves training as it was
    config = load_config(batched.run_dir / "config.yaml")
    periodic = PeriodicEvaluation(config, get_component("algorithm", "ppo")())
    assert periodic.env.batch_size == torch.Size([3])
    periodic.close()
    final, alone = batched.final_evaluation, one.final_evaluation
    assert final is not None and alone is not None
    assert final.episodes == 4 and final.score is not None
    assert final.mean != alone.mean  # other episodes: two rounds of three copies
    # `marlplug evaluate RUN_DIR` evaluates on the run's copies and scores against references on
    # the same episodes, so each run's final evaluation agrees with it.
    for run, point in ((batched, final), (one, alone)):
        report = run_cli("evaluate", str(run.run_dir), "--episodes", "4", "--json")
        assert report.exit_code == 0
        out = json.loads(report.out)
        assert out["mean"] == pytest.approx(point.mean)
        assert out["score"] == pytest.approx(point.score)
