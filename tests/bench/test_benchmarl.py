"""``marlplug bench benchmarl`` and its runner ``scripts/anchors/benchmarl_vmas.py``, without
BenchMARL (it lives in its own virtualenv, never marlplug's): a Python that cannot import it is one
line with exit 2; the runner's team return cuts an episode at its end and its results file is one
``marlplug compare`` reads; marlplug's side of the timing trains the task config for real."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import torch
from tensordict import TensorDict

from marlplug.bench.benchmarl import (
    ANCHOR_SCRIPT,
    anchor_script,
    frames_per_iteration,
    marlplug_fps,
    matched_arguments,
    task_config,
)
from marlplug.experiments.compare import compare, gather
from marlplug.experiments.results import load_results

ROOT = Path(__file__).resolve().parents[2]


def runner() -> ModuleType:
    """The anchor's runner as a module (its BenchMARL imports wait for ``main``)."""
    spec = importlib.util.spec_from_file_location("benchmarl_vmas", ROOT / ANCHOR_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_python_without_benchmarl_is_one_line_with_exit_2() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "marlplug.cli.main",
            "bench",
            "benchmarl",
            "--python",
            sys.executable,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "--python" in lines[0] and "setup_benchmarl.sh" in lines[0]
    assert anchor_script() == ROOT / ANCHOR_SCRIPT


def test_team_return_sums_agents_and_steps_up_to_the_episode_end() -> None:
    # 4 steps of 2 agents; the episode ends at step 2: step 3's reward is after the end.
    reward = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [100.0, 100.0]]).unsqueeze(-1)
    done = torch.tensor([False, False, True, True]).unsqueeze(-1)
    rollout = TensorDict({"next": {"agents": {"reward": reward}, "done": done}}, batch_size=[4])
    assert runner().team_return(rollout, ["agents"]) == 21.0


def test_runs_merge_into_a_results_file_that_compare_reads(tmp_path: Path) -> None:
    module = runner()
    results = tmp_path / "benchmarl_balance_mappo.json"
    for seed, final in ((0, -10.0), (1, 20.0), (0, 5.0)):  # seed 0 again replaces the first
        module.merge(
            results,
            {
                "anchor": "BenchMARL 1.5.2",
                "cpu": "test CPU",
                "task": "balance",
                "algorithm": "mappo",
                "seed": seed,
                "preset": "fine_tuned",
                "frames": 120_000,
                "wall_s": 100.0,
                "iterations": [{"frames": 60_000, "seconds": 50.0}] * 2,
                "evaluations": [
                    {
                        "frames": 60_000,
                        "team_return_mean": -30.0,
                        "team_return_std": 1.0,
                        "episodes": 100,
                    },
                    {
                        "frames": 120_000,
                        "team_return_mean": final,
                        "team_return_std": 2.0,
                        "episodes": 100,
                    },
                ],
            },
        )
    loaded = load_results(results)
    assert [(run.seed, run.evaluation.mean) for run in loaded.runs] == [(1, 20.0), (0, 5.0)]
    assert [point.frames for point in loaded.runs[0].curve] == [60_000, 120_000]
    comparison = compare(gather([(results, loaded)]), metric="return")
    assert list(comparison.aggregates) == ["benchmarl-mappo"]
    assert comparison.seeds["benchmarl-mappo"] == [0, 1]


def test_a_python_that_is_not_a_program_is_one_line_with_exit_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "marlplug.cli.main", "bench", "benchmarl", "--python", "README.md"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: --python: README.md cannot be run"), lines[0]


def test_both_sides_get_the_same_iteration_shape() -> None:
    ppo = task_config("balance", "mappo", iterations=2, threads=1, folder="runs")
    assert (ppo.env.agents, ppo.env.model_dump()["package_mass"]) == (4, 5)
    # 6,000 frames an iteration, 4 epochs of 10 minibatches of 600: 40 optimizer steps.
    assert matched_arguments(ppo) == [
        *("--preset", "matched", "--frames-per-batch", "6000", "--n-envs", "60"),
        *("--minibatch-size", "600", "--minibatch-iters", "40"),
    ]
    replay = task_config("balance", "masac", iterations=2, threads=1, folder="runs")
    assert replay.env.continuous_actions is True
    assert frames_per_iteration(replay) == 6000


def test_marlplug_side_trains_the_task_config(tmp_path: Path) -> None:
    config = task_config("balance", "ippo", iterations=2, threads=1, folder=str(tmp_path))
    assert config.algorithm.options.critic == "local"
    small = config.model_copy(
        update={
            "train": config.train.model_copy(
                update={"num_envs": 4, "rollout_steps": 5, "minibatch_size": 20}
            )
        }
    )
    assert marlplug_fps(small) > 0
    # The run it timed is a real one: its checkpoint holds both updates.
    assert len(list(tmp_path.rglob("*.pt"))) >= 1
