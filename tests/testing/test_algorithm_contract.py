"""The built-in algorithms pass the learner-algorithm contract plugin authors run, and the contract
catches updates that break the coded runtime's assumptions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import pytest
import torch
from tensordict import TensorDictBase

from marlplug.algorithms.maddpg import MADDPG
from marlplug.algorithms.ppo import PPO
from marlplug.algorithms.row_bridge import ROUND_SEED_KEY, MaddpgRows, Rows
from marlplug.losses import RedundancyLoss
from marlplug.testing import AlgorithmCase, AlgorithmContract, check_algorithm
from tests.losses.helpers import make_batch, make_loss, make_model


class TestMADDPG(AlgorithmContract):
    algorithm_class = MADDPG
    options: ClassVar[dict[str, Any]] = {"hidden_sizes": [16, 16]}
    registered_name = "maddpg"


class TestMADDPGHeterogeneousContinuous(AlgorithmContract):
    """Two groups of different observation sizes, continuous actions: padding must change nothing."""

    algorithm_class = MADDPG
    options: ClassVar[dict[str, Any]] = {"hidden_sizes": [16]}
    env = "predator_prey"
    env_options: ClassVar[dict[str, Any]] = {
        "agents": 3,
        "adversaries": 1,
        "obstacles": 1,
        "continuous_actions": True,
    }


class TestPPO(AlgorithmContract):
    """Joint PPO runs on coded learners through its program's rows (one minibatch step)."""

    algorithm_class = PPO
    options: ClassVar[dict[str, Any]] = {"hidden_size": 16, "feature_dim": 8}
    registered_name = "ppo"

    def make_case(self, algorithm: Any) -> AlgorithmCase:
        model = make_model((("agent", 2), ("adversary", 2)), hidden=16, features=8)
        loss = make_loss(model, aux_losses={"redundancy": RedundancyLoss(coef=0.5)})
        optimizer = algorithm.make_optimizer(loss, lr=1e-2)
        program = algorithm.program(loss, lr=1e-2, max_grad_norm=0.5)
        batch = make_batch(model)
        batch.set(ROUND_SEED_KEY, torch.full(batch.batch_size, 7, dtype=torch.int64))
        return AlgorithmCase(Rows(program), torch.cat(program.rows(optimizer), dim=1), batch)

    def test_off_policy_program(self) -> None:
        pytest.skip("PPO is on-policy: the joint trainer acts and collects")


Update = Callable[[torch.Tensor, Sequence[int], TensorDictBase, Sequence[int]], torch.Tensor]


def broken_maddpg(wrap: Callable[[Update], Update]) -> type:
    """MADDPG whose program's update is ``wrap(update)``."""

    class Broken:
        Options = MADDPG.Options

        def __init__(self, **options: Any) -> None:
            self.inner = MADDPG(**options)

        def bind(self, agents: Any) -> MaddpgRows:
            program = MaddpgRows(self.inner.program(agents))
            program.update = wrap(program.update)  # type: ignore[method-assign]
            return program

    return Broken


def depends_on_its_call_mates(update: Update) -> Update:
    return lambda theta, agents, batch, seeds: (
        update(theta, agents, batch, seeds) * (1 + 0.01 * len(agents))
    )


def writes_in_place(update: Update) -> Update:
    def wrapped(theta: Any, agents: Any, batch: Any, seeds: Any) -> torch.Tensor:
        rows = update(theta, agents, batch, seeds)
        theta[list(agents)] = rows
        return rows

    return wrapped


def unseeded_noise(update: Update) -> Update:
    return lambda theta, agents, batch, seeds: (
        update(theta, agents, batch, seeds) + 1e-3 * (torch.randn(len(agents), theta.shape[1]))
    )


def drops_an_agent(update: Update) -> Update:
    return lambda theta, agents, batch, seeds: update(theta, agents[1:], batch, seeds[1:])


@pytest.mark.parametrize(
    ("wrap", "message"),
    [
        (depends_on_its_call_mates, "must not depend on who shares its call"),
        (writes_in_place, "modified theta_all in place"),
        (unseeded_noise, "the same update differs"),
        (drops_an_agent, r"update gave \(2, "),
    ],
)
def test_the_contract_catches(wrap: Callable[[Update], Update], message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_algorithm(broken_maddpg(wrap), options={"hidden_sizes": [8]})
