"""The built-in algorithms pass the learner-algorithm contract plugin authors run, and the contract
catches updates that break the coded runtime's assumptions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import pytest
import torch

from marlplug.algorithms.maddpg import MADDPG
from marlplug.algorithms.ppo import PPO
from marlplug.algorithms.protocol import AgentUpdate
from marlplug.testing import AlgorithmContract, check_algorithm

SMALL_MADDPG: dict[str, Any] = {
    "hidden_sizes": [16, 16],
    "minibatch_size": 16,
    "learning_starts": 32,
    "steps_per_iteration": 16,
}


class TestMADDPG(AlgorithmContract):
    algorithm_class = MADDPG
    options: ClassVar[dict[str, Any]] = SMALL_MADDPG
    registered_name = "maddpg"


class TestMADDPGSharedParams(AlgorithmContract):
    """One actor and critic per group, continuous actions (a learner forwards the whole group)."""

    algorithm_class = MADDPG
    options: ClassVar[dict[str, Any]] = {**SMALL_MADDPG, "share_params": True}
    env_options: ClassVar[dict[str, Any]] = {"agents": 3, "continuous_actions": True}


class TestMADDPGHeterogeneousContinuous(AlgorithmContract):
    """Two groups of different observation sizes, continuous actions: padding must change nothing."""

    algorithm_class = MADDPG
    options: ClassVar[dict[str, Any]] = {**SMALL_MADDPG, "hidden_sizes": [16]}
    env = "predator_prey"
    env_options: ClassVar[dict[str, Any]] = {
        "agents": 3,
        "adversaries": 1,
        "obstacles": 1,
        "continuous_actions": True,
    }


class TestPPO(AlgorithmContract):
    """Joint PPO: one minibatch step of its program, on a minibatch of its own rollouts."""

    algorithm_class = PPO
    options: ClassVar[dict[str, Any]] = {"hidden_size": 16, "feature_dim": 8}
    registered_name = "ppo"


class TestPPOTwoGroups(AlgorithmContract):
    """Two agent groups (rows padded to the wider group) with the redundancy penalty coupling them."""

    algorithm_class = PPO
    options: ClassVar[dict[str, Any]] = {"hidden_size": 16, "feature_dim": 8}
    env = "predator_prey"
    env_options: ClassVar[dict[str, Any]] = {"agents": 3, "adversaries": 1, "obstacles": 1}


Update = Callable[..., AgentUpdate]


def broken_maddpg(wrap: Callable[[Update], Update]) -> type:
    """MADDPG whose program's update is ``wrap(update)``."""

    class Broken:
        Options = MADDPG.Options

        def __init__(self, **options: Any) -> None:
            self.inner = MADDPG(**options)

        def bind(self, env: Any, config: Any) -> Any:
            program = self.inner.bind(env, config)
            program.update = wrap(program.update)
            return program

        def rollouts(self, env: Any, program: Any, config: Any) -> Any:
            return self.inner.rollouts(env, program, config)

    return Broken


def depends_on_its_call_mates(update: Update) -> Update:
    def wrapped(theta: Any, opt: Any, batch: Any, agents: Any, seed: int) -> AgentUpdate:
        out = update(theta, opt, batch, agents, seed)
        return AgentUpdate(out.theta * (1 + 0.01 * len(agents)), out.opt_state, out.stats)

    return wrapped


def writes_in_place(update: Update) -> Update:
    def wrapped(theta: Any, opt: Any, batch: Any, agents: Any, seed: int) -> AgentUpdate:
        out = update(theta, opt, batch, agents, seed)
        theta[list(agents)] = out.theta
        return out

    return wrapped


def unseeded_noise(update: Update) -> Update:
    def wrapped(theta: Any, opt: Any, batch: Any, agents: Any, seed: int) -> AgentUpdate:
        out = update(theta, opt, batch, agents, seed)
        noise = 1e-3 * torch.randn(out.theta.shape)
        return AgentUpdate(out.theta + noise, out.opt_state, out.stats)

    return wrapped


def drops_an_agent(update: Update) -> Update:
    return lambda theta, opt, batch, agents, seed: update(theta, opt, batch, agents[1:], seed)


@pytest.mark.parametrize(
    ("wrap", "message"),
    [
        (depends_on_its_call_mates, "must not depend on who shares its call"),
        (writes_in_place, "modified its inputs in place"),
        (unseeded_noise, "the same update gives different bits"),
        (drops_an_agent, r"update gave theta \(2, "),
    ],
)
def test_the_contract_catches(wrap: Callable[[Update], Update], message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_algorithm(broken_maddpg(wrap), options={**SMALL_MADDPG, "hidden_sizes": [8]})
