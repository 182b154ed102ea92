"""``marlplug bench scaling`` on a tiny budget: both sweeps, real runs, consistent ratios; a row per
critic; the MADDPG path; every registered algorithm through the bench; the options the replay-based
ones refuse; an unknown algorithm."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner

from marlplug.bench.scaling import format_table, run_scaling, scaling, train_point
from marlplug.plugins import get_plugin_manager

#: Every registered algorithm (the built-ins, and any installed plugin's).
ALGORITHMS = sorted(get_plugin_manager().registry("algorithm"))

#: Every point a few seconds: 4 copies of 2-3 agents, 2 updates of 5 steps per copy.
TINY = [
    *("--num-envs", "4", "--base-agents", "2", "--base-envs", "4"),
    *("--updates", "2", "--minibatch", "20", "--sim-steps", "2"),
]  # fmt: skip


def test_bench_scaling_json_has_both_sweeps_a_row_per_critic_and_consistent_ratios() -> None:
    # A real process: TorchRL logs INFO lines to stdout when it is imported, and --json must stay
    # parseable as a whole.
    environment = {k: v for k, v in os.environ.items() if k != "RL_LOGGING_LEVEL"}
    args = [
        *("bench", "scaling", "--json", *TINY, "--num-envs", "8", "--rollout-steps", "5"),
        *("--agents", "2", "--agents", "3", "--critic", "state", "--critic", "local"),
        *("--critic", "state+shared"),
    ]
    result = subprocess.run(
        [sys.executable, "-m", "marlplug.cli.main", *args],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    # The num_envs sweep with the first critic; the agents sweep with each critic at each M.
    assert [(r["sweep"], r["critic"], r["num_envs"], r["agents"]) for r in rows] == [
        ("num_envs", "state", 4, 2),
        ("num_envs", "state", 8, 2),
        ("agents", "state", 4, 2),
        ("agents", "local", 4, 2),
        ("agents", "state+shared", 4, 2),
        ("agents", "state", 4, 3),
        ("agents", "local", 4, 3),
        ("agents", "state+shared", 4, 3),
    ]
    for row in rows:
        assert row["algorithm"] == "ppo"
        # Frames as the trainer counts them: env steps x copies, every update.
        assert row["frames"] == 2 * 5 * row["num_envs"] == 2 * row["frames_per_update"]
        assert row["fps"] > 0 and row["sim_steps_per_s"] > 0
        # Every frame is one step of all M agents.
        assert row["agent_steps_per_s"] == pytest.approx(row["fps"] * row["agents"], abs=0.1)
        shares = [row["collect_share"], row["update_share"], row["other_share"]]
        assert all(0.0 <= share <= 1.0 for share in shares) and row["collect_share"] > 0
        assert sum(shares) == pytest.approx(1.0, abs=0.01)
        assert row["train_over_sim"] == pytest.approx(row["fps"] / row["sim_steps_per_s"], abs=1e-3)
    # One simulator measurement per size, shared by the critics.
    assert rows[2]["sim_steps_per_s"] == rows[3]["sim_steps_per_s"]
    points = [("num_envs", "state"), ("agents", "state"), ("agents", "local")]
    for sweep, critic in [*points, ("agents", "state+shared")]:
        first, *others = [r for r in rows if (r["sweep"], r["critic"]) == (sweep, critic)]
        assert first["speedup"] == 1.0
        for row in others:
            assert row["speedup"] == pytest.approx(row["fps"] / first["fps"], abs=0.01)


def test_bench_scaling_maddpg_learns_in_every_timed_iteration() -> None:
    # No --rollout-steps: each copy steps until one iteration holds a minibatch (20 / 4 copies).
    args = ["--algorithm", "maddpg", "--json", "--agents", "3", *TINY]
    result = CliRunner().invoke(scaling, args)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [(r["sweep"], r["algorithm"], r["critic"], r["agents"]) for r in rows] == [
        ("num_envs", "maddpg", "joint", 2),
        ("agents", "maddpg", "joint", 3),
    ]
    for row in rows:
        assert (row["rollout_steps"], row["frames_per_update"], row["frames"]) == (5, 20, 40)
        assert row["agent_steps_per_s"] == pytest.approx(row["fps"] * row["agents"], abs=0.1)
        # Learning starts after the first iteration's collection: the timed iterations update.
        assert row["collect_share"] > 0 and row["update_share"] > 0


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_bench_scaling_measures_every_registered_algorithm(algorithm: str) -> None:
    # One point each: 4 copies of 2 agents on VMAS, 2 iterations, and the simulator alone.
    (row,) = run_scaling(
        num_envs=(4,),
        agents=(),
        base_agents=2,
        base_envs=4,
        updates=2,
        rollout_steps=25,
        minibatch=20,
        sim_steps=2,
        algorithm=algorithm,
    )
    assert (row["algorithm"], row["agents"], row["num_envs"]) == (algorithm, 2, 4)
    assert row["frames"] == 2 * row["frames_per_update"] == 2 * 25 * 4
    assert row["fps"] > 0 and row["sim_steps_per_s"] > 0 and row["speedup"] == 1.0
    assert row["train_over_sim"] == pytest.approx(row["fps"] / row["sim_steps_per_s"], abs=1e-3)
    # Every timed iteration updates (replay-based ones learn from the first collection on).
    assert row["collect_share"] > 0 and row["update_share"] > 0


def test_bench_scaling_names_each_replay_algorithms_own_critic() -> None:
    critics = {
        algorithm: train_point(
            num_envs=4, agents=2, updates=2, rollout_steps=5, minibatch=20, threads=1,
            algorithm=algorithm,
        )["critic"]
        for algorithm in ("iddpg", "qmix")
    }  # fmt: skip
    # IDDPG's critics read the agent's own observation; Q-learners have no critic.
    assert critics == {"iddpg": "local", "qmix": "-"}


@pytest.mark.parametrize("algorithm", ["maddpg", "qmix"])
@pytest.mark.parametrize("option", [["--critic", "state"], ["--threads", "2"]])
def test_bench_scaling_replay_algorithms_refuse_ppo_options_in_one_line(
    algorithm: str, option: list[str]
) -> None:
    result = CliRunner().invoke(scaling, ["--algorithm", algorithm, *option])
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith(f"Error: {option[0]}: {algorithm}")


def test_bench_scaling_names_the_valid_algorithms_for_an_unknown_one() -> None:
    result = CliRunner().invoke(scaling, ["--algorithm", "qmx"])
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert errors == [
        "Error: --algorithm: unknown algorithm 'qmx' (did you mean 'qmix'?); available: "
        + ", ".join(ALGORITHMS)
    ]


def test_bench_scaling_table_names_every_column() -> None:
    row = {
        "sweep": "agents",
        "critic": "joint",
        "agents": 8,
        "num_envs": 256,
        "fps": 5852.0,
        "agent_steps_per_s": 46816.0,
        "collect_share": 0.25,
        "update_share": 0.6,
        "other_share": 0.15,
        "sim_steps_per_s": 46157.0,
        "train_over_sim": 0.13,
        "speedup": 1.0,
    }
    header, *lines = format_table([row, {**row, "critic": "local", "speedup": 2.5}]).splitlines()
    assert header.split() == [
        "sweep",
        "critic",
        "M",
        "num_envs",
        "frames/s",
        "agent-steps/s",
        "collect",
        "update",
        "other",
        "sim",
        "steps/s",
        "train/sim",
        "speed-up",
    ]
    assert [line.split() for line in lines] == [
        [
            *("agents", "joint", "8", "256", "5,852", "46,816"),
            *("25%", "60%", "15%", "46,157", "0.13", "1.00x"),
        ],
        [
            *("agents", "local", "8", "256", "5,852", "46,816"),
            *("25%", "60%", "15%", "46,157", "0.13", "2.50x"),
        ],
    ]


def test_train_point_applies_the_users_sets_after_its_own() -> None:
    # train.updates is the bench's own setting; a later assignment wins, so 3 updates run.
    row = train_point(
        num_envs=4,
        agents=2,
        updates=2,
        rollout_steps=5,
        minibatch=10,
        threads=1,
        sets=["train.updates=3", "env.entity_order=world"],
    )
    assert row["frames"] == 3 * 5 * 4


def test_bench_scaling_records_the_sets_in_every_row() -> None:
    args = ["--json", *TINY, "--agents", "2", "--set", "algorithm.activation=relu"]
    result = CliRunner().invoke(scaling, args)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [row["sets"] for row in rows] == [["algorithm.activation=relu"]] * 2


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("env.agents=8", "error: --set env.agents: the bench sets it at every point; use --agents"),
        ("train.torch_threads=2", "error: --set train.torch_threads: the bench sets it at every"),
        ("env.entity_order=sideways", "env.entity_order"),
    ],
)
def test_bench_scaling_refuses_a_bad_set_before_training_in_one_line(
    assignment: str, message: str, run_cli: Callable[..., Any]
) -> None:
    result = run_cli("bench", "scaling", *TINY, "--set", assignment)
    assert result.exit_code == 2
    assert message in result.err and "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) <= 2
