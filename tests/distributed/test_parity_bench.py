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
    args = [*TINY, "--scenario", "predator_prey", "--agents", "4", "--adversaries", "2"]
    result = CliRunner().invoke(main, [*args, "--coded-seeds", "0", "--json", str(output)])
    assert result.exit_code == 0, result.output
    entry = json.loads(output.read_text())["predator_prey"]
    # The paper's K (here 2), with the scenario's other options as they were.
    assert entry["env_options"] == {
        "agents": 4,
        "adversaries": 2,
        "obstacles": 2,
        "max_steps": 25,
        "continuous_actions": False,
        "entity_order": "world",
    }
    # Predators and prey: a random floor and a curve per group, since their sum hides who learns.
    assert set(entry["random_groups"]) == {"agent", "adversary"}
    assert {"return/agent", "return/adversary"} <= set(entry["centralized"]["0"][0])
    # And each group's reference once the other side learns: the group at random against the
    # other's trained agents, at every point (before training: against the initial actors).
    for point in entry["centralized"]["0"]:
        against = {point["random_vs_trained/agent"], point["random_vs_trained/adversary"]}
        assert all(map(math.isfinite, against))
    # Another seed trained by another invocation joins the same panel: --replot merges the seeds.
    other = tmp_path / "pp_seed1.json"
    result = CliRunner().invoke(
        main, [*args, "--seeds", "1", "--coded-seeds", "0", "--json", str(other)]
    )
    assert result.exit_code == 0, result.output
    merged_path = tmp_path / "merged.json"
    replot = ["--replot", str(output), "--replot", str(other), "--plot", str(tmp_path / "m.png")]
    result = CliRunner().invoke(main, [*replot, "--json", str(merged_path)])
    assert result.exit_code == 0, result.output
    merged = json.loads(merged_path.read_text())["predator_prey"]
    assert sorted(merged["centralized"]) == ["0", "1"]
    finals = sorted(curve[-1]["return"] for curve in merged["centralized"].values())
    assert merged["final_median"] == pytest.approx(sum(finals) / 2)
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


def test_a_config_file_gives_the_runs_settings(tmp_path: Path) -> None:
    # The paper's configs (marlplug/configs/paper_*.yaml) are run this way, with their own sizes.
    config = tmp_path / "tiny.yaml"
    config.write_text(
        "env: {name: keep_away, agents: 3, adversaries: 2}\n"
        "algorithm: {name: maddpg, steps_per_iteration: 10, learning_starts: 20,"
        " minibatch_size: 16, hidden_sizes: [8]}\n"
        "train: {updates: 4}\n"
        "coding: {scheme: mds, learners: 6, clock: simulated,"
        " stragglers: {count: 1, delay_s: 0.5}}\n"
    )
    output = tmp_path / "ka.json"
    args = ["--config", str(config), "--eval-every", "2", "--episodes", "2", "--json", str(output)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    entry = json.loads(output.read_text())["keep_away"]
    assert (entry["env_options"]["agents"], entry["env_options"]["adversaries"]) == (3, 2)
    assert entry["coded_label"] == "coded (mds, N=6, k=1, t_s=0.5 s)"
    # And the algorithm's settings, every option resolved, as the file gave them.
    assert entry["algorithm"]["name"] == "maddpg"
    assert (entry["algorithm"]["hidden_sizes"], entry["algorithm"]["critic"]) == ([8], "joint")
    assert entry["updates"] == 4
    centralized, coded = entry["centralized"]["0"], entry["coded"]["0"]
    assert [p["env_steps"] for p in centralized] == [0, 20, 40]
    # mds: every learner updates all agents in one call, the centralized call's shapes, so the
    # decoded actors are the centralized ones bit for bit on any CPU.
    assert [p["return"] for p in coded] == [p["return"] for p in centralized]
    # The file says what the flags would: giving both is refused, naming the flags.
    refused = CliRunner().invoke(main, [*args, "--agents", "4", "--num-envs", "2"])
    assert refused.exit_code == 2
    assert "drop --agents, --num-envs" in refused.output
    # A config without a coding: section has no coded run to compare (unless --coded-seeds 0).
    config.write_text(config.read_text().split("coding:")[0])
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and "no coding section" in refused.output
    config.write_text("env: {name: nowhere}\n")
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and "env.name" in refused.output


def test_coded_ppo_with_a_state_critic_and_config_path_overrides(tmp_path: Path) -> None:
    # Any algorithm that acts can be compared; dotted --set keys are config paths (here the coding
    # section a PPO config lacks), and the evaluation env writes the global state the critic reads.
    config = tmp_path / "ppo.yaml"
    config.write_text(
        "env: {name: cooperative_navigation, agents: 2}\n"
        "algorithm: {name: ppo, critic: state, hidden_size: 8, feature_dim: 8}\n"
        "train: {num_envs: 2, rollout_steps: 10, updates: 2, n_epochs: 1, minibatch_size: 10}\n"
    )
    output = tmp_path / "ppo.json"
    coding = [
        "--set",
        "coding.scheme=mds",
        "--set",
        "coding.learners=3",
        "--set",
        "coding.clock=simulated",
    ]
    args = ["--config", str(config), *coding, "--eval-every", "1", "--episodes", "1"]
    result = CliRunner().invoke(main, [*args, "--json", str(output)])
    assert result.exit_code == 0, result.output
    entry = json.loads(output.read_text())["cooperative_navigation"]
    assert entry["coded_label"].startswith("coded (mds, N=3")
    centralized, coded = entry["centralized"]["0"], entry["coded"]["0"]
    assert [p["iteration"] for p in centralized] == [0, 1, 2]
    assert [p["return"] for p in coded] == pytest.approx([p["return"] for p in centralized])
    refused = CliRunner().invoke(main, [*args, "--set", "coding.learners=many"])
    assert refused.exit_code == 2 and "coding.learners" in refused.output


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("train.eval_backend", "on mpe"),
        ("train.eval_every", "--eval-every"),
        ("train.eval_episodes", "--episodes"),
    ],
)
def test_overriding_the_runs_own_evaluation_is_refused(key: str, hint: str) -> None:
    """The bench evaluates the runs itself, so such an override would change nothing: it says so."""
    result = CliRunner().invoke(main, [*TINY, "--set", f"{key}=vmas"])
    assert result.exit_code == 2
    assert f"--set {key}:" in result.output and hint in result.output
    assert "Traceback" not in result.output
