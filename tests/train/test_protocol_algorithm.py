"""A third-party algorithm that implements only the learner protocol (tests/train/protocol_plugin.py),
registered through the hook, trains centralized and coded through the one orchestrator: the same
state either way, resumed bit-identically, with frozen agents, non-finite stops and the CLI."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

import marlplug
from marlplug import load_config
from marlplug.config import MarlplugConfig
from marlplug.envs import make_env
from marlplug.errors import ConfigError
from marlplug.runs.checkpoint import CHECKPOINT_NAME, TRAINING_KEY, load_checkpoint
from marlplug.runs.iteration_report import rounds_columns
from marlplug.runs.run_config import load_run_config
from marlplug.testing import register_plugin
from marlplug.train.components import learner_algorithm
from marlplug.train.executors import CentralizedExecutor
from marlplug.train.loop import Training
from marlplug.train.orchestrator import run
from tests.train import protocol_plugin

BASE = [
    "env.agents=2",
    "algorithm.name=reward_regression",
    "algorithm.steps_per_iteration=12",
    "train.updates=4",
    "logging.progress=false",
]
CODED = [
    "coding.scheme=mds",
    "coding.learners=4",
    "coding.clock=simulated",
    "coding.stragglers.count=1",
    "coding.stragglers.delay_s=0.05",
]


@pytest.fixture(autouse=True)
def plugin() -> Iterator[None]:
    with register_plugin(protocol_plugin, name="test-protocol-algorithm"):
        yield


def cli_config(tmp_path: Path) -> str:
    """A config file naming the plugin's algorithm (the packaged default is PPO's)."""
    path = tmp_path / "regression.yaml"
    path.write_text("algorithm: {name: reward_regression}\n")
    return str(path)


def config(*overrides: str) -> MarlplugConfig:
    return load_config(data={}, overrides=[*BASE, *overrides])


def relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm())


def test_trains_centralized_and_coded_to_the_same_state(tmp_path: Path) -> None:
    centralized = run(config(), run_dir=tmp_path / "centralized")
    coded = run(config(*CODED), run_dir=tmp_path / "coded")
    assert centralized.opt_state.shape == (2, centralized.theta.shape[1] + 1)
    assert int(centralized.opt_state[0, -1]) == 4 * 2  # two rounds per iteration
    assert relative(coded.theta, centralized.theta) <= 1e-6
    assert relative(coded.opt_state, centralized.opt_state) <= 1e-6
    assert [log.rounds for log in coded.iterations] == [2, 2, 2, 2]
    assert all(len(log.round_logs) == 2 for log in coded.iterations)
    assert [r.round_index for r in coded.iterations[-1].round_logs] == [6, 7]
    assert all(log.round is None for log in centralized.iterations)
    assert (tmp_path / "coded" / "timeline.png").stat().st_size > 1000
    # It learns: the joint loss the program reports falls.
    losses = [log.stats["loss"] for log in centralized.iterations]
    assert losses[-1] < losses[0]
    with (tmp_path / "coded" / "rounds.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    # One row per coded round, each with its iteration.
    assert [row["iteration"] for row in rows] == [str(i // 2) for i in range(8)]
    assert [row["round"] for row in rows] == [str(i) for i in range(8)]
    assert all(row["round_learners_used"] for row in rows)
    # A centralized run keeps one row per iteration, without round columns.
    with (tmp_path / "centralized" / "rounds.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        assert [row["iteration"] for row in reader] == ["0", "1", "2", "3"]
    assert reader.fieldnames == rounds_columns(coded=False)
    # The program's statistics are logged per iteration (the mean over its rounds).
    scalars = tmp_path / "centralized" / "metrics" / "scalars"
    logged = (scalars / "loss.csv").read_text().split()
    assert logged[0] == "step,loss" and len(logged) == 5
    assert len((scalars / "agent_1" / "grad_norm.csv").read_text().split()) == 5


def test_a_resumed_coded_run_is_bit_identical_to_one_never_stopped(tmp_path: Path) -> None:
    straight = run(config(*CODED), run_dir=tmp_path / "straight")
    run(config(*CODED), iterations=2, run_dir=tmp_path / "stopped")
    state = load_checkpoint(tmp_path / "stopped" / CHECKPOINT_NAME)
    assert state[TRAINING_KEY]["counters"] == {"iterations": 2, "rounds": 4, "env_steps": 24}
    assert state["config"]["algorithm"]["name"] == "reward_regression"
    resumed = run(load_run_config(tmp_path / "stopped"), resume_dir=tmp_path / "stopped")
    assert [log.iteration for log in resumed.iterations] == [2, 3]
    assert torch.equal(resumed.theta, straight.theta)
    assert torch.equal(resumed.opt_state, straight.opt_state)
    assert resumed.history == straight.history
    # The resumed rounds met the stragglers of the run never stopped.
    stragglers = [log.round.stragglers for log in straight.iterations[2:] if log.round]
    assert [log.round.stragglers for log in resumed.iterations if log.round] == stragglers


def test_frozen_agents_keep_their_rows() -> None:
    cfg = config()
    algorithm = learner_algorithm(cfg)
    env = make_env("cooperative_navigation", agents=2, seed=0)
    program = algorithm.bind(env, cfg)
    source = algorithm.rollouts(env, program, cfg)
    training = Training(
        program, source, CentralizedExecutor(program, seed=0), agent_names=["a", "b"], seed=0
    )
    before = training.theta.clone(), training.opt_state.clone()
    training.freeze([0])
    training.step()
    source.close()
    assert torch.equal(training.theta[0], before[0][0])
    assert torch.equal(training.opt_state[0], before[1][0])
    assert not torch.equal(training.theta[1], before[0][1])
    assert training.state_dict()["frozen"] == [0]


def test_non_finite_updates_stop_the_run_with_one_line(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    sets = [
        *BASE,
        "algorithm.lr=1e30",
        "train.max_nonfinite_steps=2",
        f"logging.dir={tmp_path}",
        "logging.run_name=nan",
    ]
    result = run_cli("train", cli_config(tmp_path), *(f"--set={value}" for value in sets))
    assert result.exit_code == 2
    *warnings, error = result.err.strip().splitlines()
    # Each iteration with non-finite values said so as it ended; the stop is one line.
    assert all(line.startswith("warning: iteration ") for line in warnings), result.err
    assert error.startswith("error: train.max_nonfinite_steps: agent"), result.err


def test_the_cli_trains_it_coded_and_resumes_it(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    sets = [*BASE, *CODED, f"logging.dir={tmp_path}", "logging.run_name=cli", "train.updates=2"]
    result = run_cli("train", cli_config(tmp_path), *(f"--set={value}" for value in sets))
    assert result.exit_code == 0, result.err
    for label in ("rounds log:", "timeline:", "checkpoint:", "learning curve:", "resume with:"):
        assert label in result.out
    resumed = run_cli("train", "--resume", str(tmp_path / "cli"), "--set", "train.updates=3")
    assert resumed.exit_code == 0, resumed.err
    state = load_checkpoint(tmp_path / "cli" / CHECKPOINT_NAME)
    assert state[TRAINING_KEY]["counters"]["iterations"] == 3


class _BindOnly(protocol_plugin.RewardRegression):
    rollouts = None  # type: ignore[assignment]  # half the protocol: no source of minibatches


def test_an_algorithm_without_rollouts_is_a_one_line_error_naming_the_protocol() -> None:
    @marlplug.hookimpl
    def marlplug_algorithms() -> dict[str, Any]:
        return {"bind_only": _BindOnly}

    with register_plugin(SimpleNamespace(marlplug_algorithms=marlplug_algorithms), name="half"):
        cfg = load_config(data={}, overrides=["algorithm.name=bind_only"])
        with pytest.raises(ConfigError, match=r"'bind_only' does not implement .*rollouts"):
            learner_algorithm(cfg)
