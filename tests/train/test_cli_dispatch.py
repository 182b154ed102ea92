"""`marlplug train` runs every algorithm (PPO, MADDPG; coded or not) through the one orchestrator,
with the same summary; a bad coded PPO config is a one-line error."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def test_too_few_coded_ppo_learners_is_a_one_line_error_naming_the_field(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    result = run_cli(
        "train",
        "--set",
        "coding.scheme=mds",
        "--set",
        "coding.learners=2",
        "--set",
        f"logging.dir={tmp_path}",
    )
    assert result.exit_code == 2
    assert "coding.learners" in result.err and "N >= M" in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert not any(tmp_path.iterdir())


def test_centralized_maddpg_through_the_cli(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    config = tmp_path / "maddpg.yaml"
    config.write_text(
        "env: {name: cooperative_navigation, agents: 2}\n"
        "algorithm: {name: maddpg, minibatch_size: 16, learning_starts: 16, steps_per_iteration: 25,"
        " hidden_sizes: [16]}\n"
        "train: {updates: 3}\n"
        f"logging: {{dir: '{tmp_path}', run_name: central}}\n"
    )
    result = run_cli("train", str(config), "--no-progress")
    assert result.exit_code == 0, result.err
    lines = result.out.strip().splitlines()
    assert lines[0].startswith("return per agent: ") and lines[1].startswith("return, team: ")
    assert "first 1 vs last 1 updates" in lines[1]  # train.updates counts them
    assert lines[2].startswith("frames:") and " 75 (" in lines[2]
    assert any(line.startswith("rounds log:") for line in lines)
    assert not any(line.startswith("timeline:") for line in lines)
    assert lines[-1].split() == [
        "resume",
        "with:",
        *f"marlplug train --resume {tmp_path / 'central'}".split(),
    ]
    for name in ("checkpoint.pt", "learning_curve.png", "rounds.csv", "config.yaml"):
        assert (tmp_path / "central" / name).is_file()
    team_returns = (tmp_path / "central" / "metrics" / "scalars" / "return_team.csv").read_text()
    assert team_returns.splitlines()[0] == "step,return_team"
    assert len(team_returns.strip().splitlines()) == 1 + 3
