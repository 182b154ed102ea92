"""A coded MADDPG run and a centralized one with the same seed give the same learning curve."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import torch

from marlplug import load_config
from marlplug.train.coded_run import run_coded
from marlplug.train.orchestrator import run

SMALL = {
    "minibatch_size": 64,
    "learning_starts": 64,
    "steps_per_iteration": 25,
    "hidden_sizes": [32, 32],
}


def curve(tmp_path: Path, coding: dict[str, object] | None) -> tuple[list[float], torch.Tensor]:
    data: dict[str, object] = {
        "env": {"name": "cooperative_navigation", "agents": 3},
        "algorithm": {"name": "maddpg", **SMALL},
        "train": {"updates": 5},
        "logging": {"progress": False},
    }
    if coding is not None:
        data["coding"] = coding
    result = run(load_config(data=data), run_dir=tmp_path / ("coded" if coding else "centralized"))
    return [log.episode_return for log in result.iterations], result.theta


def test_coded_and_centralized_runs_have_the_same_learning_curve(tmp_path: Path) -> None:
    centralized_curve, centralized_theta = curve(tmp_path, None)
    assert sum(not math.isnan(r) for r in centralized_curve) >= 4
    coding = {
        "scheme": "mds",
        "learners": 6,
        "clock": "simulated",
        "stragglers": {"count": 2, "delay_s": 0.1},
    }
    coded_curve, coded_theta = curve(tmp_path, coding)
    torch.testing.assert_close(
        torch.tensor(coded_curve), torch.tensor(centralized_curve), equal_nan=True
    )
    relative = (coded_theta - centralized_theta).norm() / centralized_theta.norm()
    assert relative <= 1e-6


def test_run_coded_from_a_config_logs_rounds_and_draws_the_timeline(tmp_path: Path) -> None:
    config = load_config(
        data={
            "env": {"name": "cooperative_navigation", "agents": 3},
            "algorithm": {"name": "maddpg", **SMALL},
            "train": {"updates": 4},
            "coding": {
                "scheme": "mds",
                "learners": 5,
                "clock": "simulated",
                "stragglers": {"count": 1, "delay_s": 0.2},
            },
        }
    )
    result = run_coded(config, run_dir=tmp_path)
    assert len(result.iterations) == 4
    rows = list(csv.DictReader((tmp_path / "rounds.csv").open()))
    updated = [row for row in rows if row.get("round_learners_used")]
    assert len(updated) == 2  # 25 steps per iteration, 64 transitions before the first update
    for row in updated:
        assert float(row["round_wait_s"]) > 0 and float(row["round_decode_s"]) > 0
        assert len(row["round_learners_used"].split()) >= 3
    assert (tmp_path / "timeline.png").stat().st_size > 1000


def test_run_maddpg_without_coding_trains_centrally_and_matches_the_coded_run(
    tmp_path: Path,
) -> None:
    base = {
        "env": {"name": "cooperative_navigation", "agents": 3},
        "algorithm": {"name": "maddpg", **SMALL},
        "train": {"updates": 4},
    }
    centralized = run(load_config(data=base), run_dir=tmp_path / "centralized")
    coded = run(
        load_config(
            data={**base, "coding": {"scheme": "replication", "learners": 4, "clock": "simulated"}}
        ),
        run_dir=tmp_path / "coded",
    )
    assert all(log.round is None for log in centralized.iterations)
    assert not (tmp_path / "centralized" / "timeline.png").exists()
    relative = (coded.theta - centralized.theta).norm() / centralized.theta.norm()
    assert relative <= 1e-5
