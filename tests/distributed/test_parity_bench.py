"""The learning-parity bench: greedy evaluation curves of coded and centralized MADDPG runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from marlplug.bench.parity import main

#: A few seconds: 4 iterations of 10 steps, learning after 20 transitions, tiny networks.
TINY = [
    "--iterations", "4", "--eval-every", "2", "--episodes", "2", "--agents", "2",
    "--learners", "3", "--stragglers", "1",
    "--set", "steps_per_iteration=10", "--set", "learning_starts=20",
    "--set", "minibatch_size=16", "--set", "hidden_sizes=[8]",
]  # fmt: skip


def test_coded_and_centralized_curves_are_equal_and_evaluated(tmp_path: Path) -> None:
    plot, output = tmp_path / "parity.png", tmp_path / "parity.json"
    result = CliRunner().invoke(main, [*TINY, "--plot", str(plot), "--json", str(output)])
    assert result.exit_code == 0, result.output
    entry = json.loads(output.read_text())["cooperative_navigation"]
    centralized, coded = entry["centralized"]["0"], entry["coded"]["0"]
    # One point before training and one after each chunk of 2 iterations, at the env steps run.
    assert [p["iteration"] for p in centralized] == [0, 2, 4]
    assert [p["env_steps"] for p in centralized] == [0, 20, 40]
    # The coded run decodes every agent's update exactly: the same actors, the same evaluation.
    assert [p["return"] for p in coded] == [p["return"] for p in centralized]
    assert entry["max_abs_difference"] == 0.0
    # Learning started at iteration 2: the actors after it differ from the initial ones.
    assert centralized[2]["return"] != centralized[0]["return"]
    assert math.isfinite(entry["random"]) and entry["agents"] == 2
    # Cooperative navigation has a scripted oracle: the curves' ceiling, far above random.
    assert entry["scripted"] > entry["random"]
    assert plot.stat().st_size > 0


def test_trained_on_batched_vmas_evaluated_on_mpe(tmp_path: Path) -> None:
    pytest.importorskip("vmas")
    output = tmp_path / "vmas.json"
    args = [*TINY, "--env-backend", "vmas", "--num-envs", "4", "--json", str(output)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    entry = json.loads(output.read_text())["cooperative_navigation"]
    assert (entry["env_backend"], entry["num_envs"]) == ("vmas", 4)
    centralized, coded = entry["centralized"]["0"], entry["coded"]["0"]
    # Every iteration takes 10 steps in each of the 4 copies.
    assert [p["env_steps"] for p in centralized] == [0, 80, 160]
    assert [p["return"] for p in coded] == [p["return"] for p in centralized]
    assert centralized[2]["return"] != centralized[0]["return"]


def test_adversarial_scenario_keeps_group_floors_and_replots(tmp_path: Path) -> None:
    output = tmp_path / "pp.json"
    args = [*TINY, "--scenario", "predator_prey", "--agents", "3", "--coded-seeds", "0"]
    result = CliRunner().invoke(main, [*args, "--json", str(output)])
    assert result.exit_code == 0, result.output
    entry = json.loads(output.read_text())["predator_prey"]
    # Predators and prey: a random floor and a curve per group, since their sum hides who learns.
    assert set(entry["random_groups"]) == {"agent", "adversary"}
    assert {"return/agent", "return/adversary"} <= set(entry["centralized"]["0"][0])
    # A figure from saved results, with no training; an entry saved before the floors were kept
    # gets them recomputed.
    del entry["random_groups"]
    output.write_text(json.dumps({"predator_prey": entry}))
    plot = tmp_path / "again.png"
    result = CliRunner().invoke(main, ["--replot", str(output), "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    assert plot.stat().st_size > 0 and "predator_prey" in result.output
    refused = CliRunner().invoke(main, ["--replot", str(output)])
    assert refused.exit_code == 2 and "--plot" in refused.output
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    refused = CliRunner().invoke(main, ["--replot", str(bad), "--plot", str(plot)])
    assert refused.exit_code == 2 and "not a --json output" in refused.output
