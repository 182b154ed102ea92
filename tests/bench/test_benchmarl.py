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

import click
import pytest
import torch
from tensordict import TensorDict

from marlplug.bench.benchmarl import (
    ANCHOR_SCRIPT,
    BENCHMARL_MINIBATCH,
    BENCHMARL_UPDATES,
    TASK_CONFIGS,
    anchor_script,
    format_rows,
    marlplug_fps,
    task_config,
)
from marlplug.bench.benchmarl_shape import (
    BENCHMARL_HIDDEN,
    benchmarl_shape,
    check_benchmarl_shape,
    frames_per_iteration,
    hidden_widths,
    iteration_shape,
    matched_arguments,
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


@pytest.mark.parametrize(
    ("python", "says"),
    [
        pytest.param(sys.executable, "cannot import benchmarl", id="python-without-benchmarl"),
        pytest.param("README.md", "cannot be run", id="not-a-program"),
    ],
)
def test_a_bad_python_is_one_line_with_exit_2(python: str, says: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "marlplug.cli.main", "bench", "benchmarl", "--python", python],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: --python: {python} {says}"), lines[0]
    assert "setup_benchmarl.sh" in lines[0]


def test_the_anchor_script_is_found_in_the_checkout() -> None:
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


def test_both_sides_get_the_same_iteration_shape() -> None:
    ppo = task_config("balance", "mappo", iterations=2, threads=1, folder="runs")
    assert (ppo.env.agents, ppo.env.model_dump()["package_mass"]) == (4, 5)
    # 6,000 frames an iteration, 4 epochs of 10 minibatches of 600: 40 optimizer steps. BenchMARL's
    # on_policy_n_minibatch_iters are passes over the rollout (10 minibatches each): 4, not 40.
    assert matched_arguments(ppo) == [
        *("--preset", "matched", "--frames-per-batch", "6000", "--n-envs", "60"),
        *("--minibatch-size", "600", "--minibatch-iters", "4"),
    ]
    module = runner()
    required = ["--task", "balance", "--algorithm", "mappo", "--frames", "12000", "--out", "x"]
    args = module.argument_parser().parse_args([*required, *matched_arguments(ppo)])
    ran = benchmarl_shape(module.matched_settings(args), on_policy=True)
    assert ran == {"frames_per_iteration": 6000, "updates_per_iteration": 40, "minibatch_size": 600}
    assert iteration_shape(ppo)["updates_per_iteration"] == 40
    replay = task_config("balance", "masac", iterations=2, threads=1, folder="runs")
    assert replay.env.continuous_actions is True
    assert frames_per_iteration(replay) == 6000
    # By default one update of 1,024 after 6,000 frames, on both sides.
    assert matched_arguments(replay)[-4:] == [
        *("--minibatch-size", "1024", "--minibatch-iters", "1"),
    ]
    # BenchMARL's fine-tuned off-policy shape: 1,000 updates of 128 after 6,000 frames (60 copies
    # x 100 steps); the runner passes them on as off_policy_n_optimizer_steps and _train_batch_size.
    shaped = task_config(
        "balance",
        "iql",
        iterations=2,
        threads=1,
        folder="runs",
        updates_per_iteration=BENCHMARL_UPDATES,
        replay_minibatch=BENCHMARL_MINIBATCH,
    )
    options = shaped.algorithm.options.model_dump()
    assert (options["updates_per_iteration"], options["minibatch_size"]) == (1000, 128)
    assert iteration_shape(shaped) == {
        "frames_per_iteration": 6000,
        "n_envs": 60,
        "updates_per_iteration": 1000,
        "minibatch_size": 128,
    }
    assert matched_arguments(shaped) == [
        *("--preset", "matched", "--frames-per-batch", "6000", "--n-envs", "60"),
        *("--minibatch-size", "128", "--minibatch-iters", "1000"),
    ]
    # What BenchMARL is set to from those arguments, through the runner's own command line.
    required = ["--task", "balance", "--algorithm", "iql", "--frames", "12000", "--out", "x"]
    args = module.argument_parser().parse_args([*required, *matched_arguments(shaped)])
    settings = module.matched_settings(args)
    assert settings["off_policy_collected_frames_per_batch"] == 6000
    assert settings["off_policy_n_envs_per_worker"] == 60
    assert settings["off_policy_n_optimizer_steps"] == 1000
    assert settings["off_policy_train_batch_size"] == 128
    assert benchmarl_shape(settings, on_policy=False) == {
        "frames_per_iteration": 6000,
        "updates_per_iteration": 1000,
        "minibatch_size": 128,
    }


def test_a_benchmarl_run_of_another_shape_is_refused() -> None:
    config = task_config("balance", "mappo", iterations=2, threads=1, folder="runs")
    settings = {
        "on_policy_collected_frames_per_batch": 6000,
        "on_policy_minibatch_size": 600,
        "on_policy_n_minibatch_iters": 4,
    }
    check_benchmarl_shape({"settings": settings, "iterations": [{"optimizer_steps": 40}]}, config)
    # The shape marlplug's matched preset asked for before: 40 passes of 10 minibatches.
    with pytest.raises(click.ClickException, match="400 for updates_per_iteration, marlplug 40"):
        check_benchmarl_shape(
            {"settings": {**settings, "on_policy_n_minibatch_iters": 40}, "iterations": []}, config
        )
    # Settings that say one thing while the runner counted another.
    with pytest.raises(click.ClickException, match="41 for updates_per_iteration"):
        check_benchmarl_shape(
            {"settings": settings, "iterations": [{"optimizer_steps": 41}]}, config
        )


def test_both_sides_get_benchmarls_networks() -> None:
    # BenchMARL's runner gives every actor and critic its default MLP (two hidden layers of 256,
    # tanh): marlplug's side of the timing gets the same widths, whatever the task config has.
    ppo = task_config("balance", "mappo", iterations=2, threads=1, folder="runs")
    assert hidden_widths(ppo) == list(BENCHMARL_HIDDEN) == [256, 256]
    assert (ppo.algorithm.options.hidden_size, ppo.algorithm.options.activation) == (256, "tanh")
    for algorithm in ("maddpg", "iql"):
        replay = task_config("balance", algorithm, iterations=2, threads=1, folder="runs")
        assert replay.algorithm.options.hidden_sizes == [256, 256]
    # A BenchMARL run with other widths is refused, not timed beside marlplug's.
    settings = {"on_policy_collected_frames_per_batch": 6000, "on_policy_minibatch_size": 600}
    result = {
        "settings": {**settings, "on_policy_n_minibatch_iters": 4},
        "iterations": [],
        "model": {"num_cells": [64, 64], "activation": "Tanh"},
    }
    with pytest.raises(click.ClickException, match=r"hidden layers \[64, 64\]"):
        check_benchmarl_shape(result, ppo)
    check_benchmarl_shape({**result, "model": {"num_cells": [256, 256]}}, ppo)


def test_the_table_states_the_shape() -> None:
    row = {
        "task": "balance",
        "algorithm": "vdn",
        "frames_per_iteration": 6000,
        "updates_per_iteration": 1000,
        "minibatch_size": 128,
        "hidden": [256, 256],
        "marlplug_fps": 900.0,
        "benchmarl_fps": 300.0,
        "ratio": 3.0,
    }
    header, line = format_rows([row]).splitlines()
    assert header.split()[2:6] == ["frames/iteration", "updates", "minibatch", "hidden"]
    assert line.split()[:6] == ["balance", "vdn", "6000", "1000", "128", "256x256"]


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


#: BenchMARL 1.5.2's task settings (benchmarl/conf/task/vmas/<task>.yaml), in marlplug's names.
BENCHMARL_TASK_SETTINGS = {
    "balance": {
        "agents": 4,
        "max_steps": 100,
        "package_mass": 5,
        "random_package_pos_on_line": True,
    },
    "navigation": {
        "agents": 3,
        "max_steps": 100,
        "collisions": True,
        "agents_with_same_goal": 1,
        "split_goals": False,
        "observe_all_goals": False,
        "shared_rew": False,
        "lidar_range": 0.35,
        "agent_radius": 0.1,
    },
    "sampling": {
        "agents": 3,
        "max_steps": 100,
        "shared_rew": False,
        "n_gaussians": 3,
        "lidar_range": 0.2,
        "cov": 0.05,
        "collisions": True,
        "spawn_same_pos": False,
    },
}


@pytest.mark.parametrize("task", sorted(TASK_CONFIGS))
def test_each_task_config_has_benchmarls_task_settings(task: str) -> None:
    env = task_config(task, "mappo", iterations=1, threads=1, folder="runs").env.model_dump()
    assert env["name"] == task and env["backend"] == "vmas" and env["continuous_actions"]
    assert {key: env[key] for key in BENCHMARL_TASK_SETTINGS[task]} == (
        BENCHMARL_TASK_SETTINGS[task]
    )
