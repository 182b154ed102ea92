"""Coded IQL ends bit for bit where the centralized run ends: its update splits by agent (each
agent's TD loss reads only its own rows and the shared minibatch), the learners' rows decode
exactly (:mod:`marlplug.coding.exact`), and with ``share_params`` every learner forwards the whole
group, so the group's mean gradient is the same on every learner. VDN's mixer couples every agent's
update: a coded VDN run is refused in one line."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch

from marlplug import load_config
from marlplug.train.orchestrator import run

# 25-step iterations on cooperative navigation (3 agents), updates from the second on.
IQL = [
    "algorithm.name=iql",
    "algorithm.minibatch_size=32",
    "algorithm.learning_starts=25",
    "algorithm.steps_per_iteration=25",
    "algorithm.hidden_sizes=[32, 32]",
    "algorithm.epsilon_decay_steps=100",
    "env.name=cooperative_navigation",
    "env.agents=3",
    "train.eval_every=0",
    "logging.progress=false",
]
SIMULATED = [
    "coding.scheme=mds",
    "coding.learners=5",
    "coding.clock=simulated",
    "coding.stragglers.count=1",
    "coding.stragglers.delay_s=0.1",
]


@pytest.mark.parametrize(
    ("share_params", "updates_per_iteration"),
    [(False, 1), (True, 1), (False, 3)],
    ids=["own", "shared", "own-3-updates"],
)
def test_coded_iql_ends_bit_identical_to_centralized(
    tmp_path: Path, share_params: bool, updates_per_iteration: int
) -> None:
    def result(name: str, *extra: str) -> tuple[torch.Tensor, torch.Tensor]:
        overrides = [
            *IQL,
            f"algorithm.share_params={str(share_params).lower()}",
            f"algorithm.updates_per_iteration={updates_per_iteration}",
            *extra,
        ]
        trained = run(load_config(data={}, overrides=overrides), run_dir=tmp_path / name)
        return trained.theta, trained.opt_state

    centralized = result("centralized", "train.updates=4")
    coded = result("coded", "train.updates=4", *SIMULATED)
    assert torch.equal(coded[0], centralized[0])
    assert torch.equal(coded[1], centralized[1])
    # Three learning iterations, each of updates_per_iteration updates (Adam's step count) ...
    assert centralized[1][:, -1].tolist() == [3.0 * updates_per_iteration] * 3
    # ... and as many coded rounds, one rounds.csv row each.
    with (tmp_path / "coded" / "rounds.csv").open(newline="") as handle:
        iterations = [row["iteration"] for row in csv.DictReader(handle)]
    assert iterations == ["0", *[str(i) for i in (1, 2, 3) for _ in range(updates_per_iteration)]]
    # The updates moved the rows: equal runs that did nothing would not pass.
    assert not torch.equal(result("before", "train.updates=2")[0], centralized[0])


def test_coded_recurrent_iql_ends_bit_identical_to_centralized(tmp_path: Path) -> None:
    """With a GRU each agent's update replays its own rows over the shared chunks: still exact."""
    gru = [
        *IQL,
        "algorithm.recurrent=gru",
        "algorithm.recurrent_hidden_size=8",
        "algorithm.sequence_length=5",
        "algorithm.minibatch_size=20",
    ]

    def result(name: str, *extra: str) -> tuple[torch.Tensor, torch.Tensor]:
        trained = run(load_config(data={}, overrides=[*gru, *extra]), run_dir=tmp_path / name)
        return trained.theta, trained.opt_state

    centralized = result("centralized", "train.updates=4")
    coded = result("coded", "train.updates=4", *SIMULATED)
    assert torch.equal(coded[0], centralized[0])
    assert torch.equal(coded[1], centralized[1])
    assert centralized[1][:, -1].tolist() == [4.0, 4.0, 4.0]  # an update every iteration
    assert not torch.equal(result("before", "train.updates=2")[0], centralized[0])


@pytest.mark.parametrize("recurrent", ["none", "gru"])
def test_coded_iql_with_double_q_and_standardized_rewards_ends_bit_identical(
    tmp_path: Path, recurrent: str
) -> None:
    """Double Q-learning reads each agent's own online and target rows; each agent's reward
    statistics fold its own rewards: still exact."""
    options = [*IQL, "algorithm.double_q=true", "algorithm.standardize_rewards=true"]
    if recurrent == "gru":
        options += ["algorithm.recurrent=gru", "algorithm.recurrent_hidden_size=8"]
        options += ["algorithm.sequence_length=5", "algorithm.minibatch_size=20"]

    def result(name: str, *extra: str) -> tuple[torch.Tensor, torch.Tensor]:
        trained = run(load_config(data={}, overrides=[*options, *extra]), run_dir=tmp_path / name)
        return trained.theta, trained.opt_state

    centralized = result("centralized", "train.updates=4")
    coded = result("coded", "train.updates=4", *SIMULATED)
    assert torch.equal(coded[0], centralized[0])
    assert torch.equal(coded[1], centralized[1])
    assert bool((centralized[1][:, -1] > 0).all())  # the reward statistics' counts: they moved
    assert not torch.equal(result("before", "train.updates=2")[0], centralized[0])
