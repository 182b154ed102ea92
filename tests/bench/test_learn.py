"""``marlplug bench learn`` and the plain TorchRL MAPPO pipeline, on tiny budgets (machinery, not learning)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
import torch
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marlplug.bench.learn import SIDES, format_table
from marlplug.bench.torchrl_mappo import GROUP, TUNED, TUTORIAL, batch_sizes, train_torchrl_mappo
from marlplug.envs import make_env, normalized_score
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)


def _marlplug(*args: str) -> subprocess.CompletedProcess[str]:
    # A real process: TorchRL logs INFO lines to stdout when it is imported, and --json must stay
    # parseable as a whole.
    environment = {k: v for k, v in os.environ.items() if k != "RL_LOGGING_LEVEL"}
    return subprocess.run(
        [sys.executable, "-m", "marlplug.cli.main", *args],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    result = _marlplug(
        "bench", "learn", "--json", "--frames", "100", "--seeds", "0,1", "--episodes", "2"
    )
    assert result.returncode == 0, result.stderr
    # stderr is a pipe here, no terminal: no progress bar, not even rich's last frame.
    assert "bench learn" not in result.stderr and "\x1b[" not in result.stderr
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def test_every_side_trains_once_per_seed_in_rotating_order(report: dict[str, Any]) -> None:
    assert list(report["sides"]) == list(SIDES) == ["marlplug", "torchrl-tutorial", "torchrl-tuned"]
    first, second = report["order"][:3], report["order"][3:]
    assert [side for _, side in first] == list(SIDES)
    assert [side for _, side in second] == [*SIDES[1:], SIDES[0]]
    assert {seed for seed, _ in first} == {0} and {seed for seed, _ in second} == {1}
    assert report["frames_budget"] == 100 and report["eval_episodes"] == 2


def test_runs_report_frames_speed_return_and_score(report: dict[str, Any]) -> None:
    references = report["references"]
    assert references["scripted"] > references["random"]
    for side in report["sides"].values():
        runs = side["runs"]
        assert [run["seed"] for run in runs] == [0, 1]
        for run in runs:
            assert run["frames"] == 100  # a budget below one batch trains one batch of it
            assert run["wall_s"] > 0
            assert run["fps"] == pytest.approx(run["frames"] / run["wall_s"])
            assert run["score"] == pytest.approx(
                normalized_score(run["final_return"], **references)
            )
        for name, value in side["median"].items():
            assert value == pytest.approx(statistics.median(run[name] for run in runs))


def test_the_table_has_a_row_per_run_and_a_median_per_side(report: dict[str, Any]) -> None:
    lines = format_table(report).splitlines()
    assert "100 frames per run" in lines[0] and lines[1].startswith("references: random")
    for side in SIDES:
        rows = [line.split() for line in lines if line.startswith(f"{side} ")]
        assert [row[1] for row in rows] == ["0", "1", "median"]
        median = report["sides"][side]["median"]
        assert float(rows[-1][5]) == pytest.approx(median["final_return"], abs=0.051)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sides", "marlplug,torchrl"], "unknown side 'torchrl'; choose from: marlplug, "),
        (["--seeds", "0,x"], "expected seeds >= 0 separated by commas"),
        (["--frames", "0"], "Invalid value for '--frames'"),
    ],
)
def test_bad_options_are_one_line(
    args: list[str], message: str, run_cli: Callable[..., Any]
) -> None:
    result = run_cli("bench", "learn", *args)
    assert result.exit_code == 2
    assert message in result.err and "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) <= 2


def test_presets_are_the_tutorial_and_the_tuned_variant() -> None:
    # The tutorial's numbers (pytorch/rl tutorials/sphinx-tutorials/multiagent_ppo.py).
    assert (TUTORIAL.frames_per_batch, TUTORIAL.epochs, TUTORIAL.minibatch_size) == (6000, 30, 400)
    assert (TUTORIAL.lr, TUTORIAL.gamma, TUTORIAL.lmbda, TUTORIAL.entropy_coeff) == (
        3e-4,
        0.99,
        0.9,
        1e-4,
    )
    # Issue 14's tuned variant.
    assert (TUNED.frames_per_batch, TUNED.num_envs, TUNED.epochs, TUNED.lr) == (2000, 4, 4, 1e-3)
    assert (TUNED.gamma, TUNED.lmbda, TUNED.entropy_coeff) == (0.95, 0.95, 0.01)
    assert batch_sizes(TUNED, 144_000) == (2000, 400)
    assert batch_sizes(TUNED, 101) == (100, 100)
    assert batch_sizes(TUNED, 3) == (4, 4)  # at least one step of every copy


def test_same_seed_trains_the_same_policy_and_it_acts_greedily() -> None:
    # On one torch thread (the module's autouse fixture), as `bench learn` trains by default: on
    # two, the two runs ended apart in a CI run on a loaded machine.
    small = replace(TUNED, agents=2, frames_per_batch=60, num_envs=2, minibatch_size=30, hidden=16)
    first = train_torchrl_mappo(small, frames=120, seed=3)
    second = train_torchrl_mappo(small, frames=120, seed=3)
    assert first.frames == 120 and first.last_batch is not None
    assert first.last_batch.batch_size == (2, 30)
    for a, b in zip(first.policy.parameters(), second.policy.parameters(), strict=True):
        assert torch.equal(a, b)
    tensordict = make_env("cooperative_navigation", agents=2, seed=0).reset()
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        acted = first.policy(tensordict)
    assert torch.equal(acted[GROUP, "action"], acted[GROUP, "logits"].argmax(-1))
