"""The contract every learner algorithm must meet, as a pytest base class and as functions.

A learner algorithm is registered through ``marlplug_algorithms`` and implements the protocol of
:mod:`marlplug.algorithms.protocol`: ``bind(env, config)`` gives its
:class:`~marlplug.algorithms.protocol.LearnerProgram` (``init_state`` and the pure batched update
``update(theta_all, opt_state, batch, agents, seed)`` that the centralized executor and every coded
learner run) and ``rollouts(env, program, config)`` the source of its minibatches. The suite binds
the algorithm to a real env, takes a real minibatch from its rollouts and checks the update. Plugin
authors subclass :class:`AlgorithmContract` (or call :func:`check_algorithm`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
import torch
from tensordict import TensorDictBase

from marlplug.algorithms.protocol import LearnerProgram
from marlplug.config import Options, load_config, validate_options
from marlplug.errors import UserError

#: A subset's rows must match the same agents' rows of an all-agents call this closely (relative
#: norm): the shapes differ, so BLAS may round differently — never bit-identity across shapes.
SUBSET_TOLERANCE = 1e-5
#: Iterations :func:`rollout_case` collects at most before the source yields a minibatch.
MAX_WARMUP_ITERATIONS = 50


@dataclass
class AlgorithmCase:
    """What the update checks run on.

    Attributes:
        program: the bound program.
        theta_all: ``[M, P]`` every agent's ``theta`` row.
        opt_state: ``[M, O]`` every agent's optimizer-state row.
        batch: one minibatch from the algorithm's rollouts.
    """

    program: LearnerProgram
    theta_all: torch.Tensor
    opt_state: torch.Tensor
    batch: TensorDictBase


def build_algorithm(algorithm_class: Any, options: Mapping[str, Any] | None = None) -> Any:
    """The algorithm built from its ``Options`` (defaults overridden by ``options``)."""
    validated = validate_options(algorithm_class.Options, dict(options or {}), ["algorithm"])
    return algorithm_class(**validated.model_dump())


def check_options(algorithm_class: type, options: Mapping[str, Any] | None = None) -> None:
    """``Options`` subclasses :class:`marlplug.Options`, builds the algorithm, rejects unknown fields."""
    options_model = getattr(algorithm_class, "Options", None)
    assert isinstance(options_model, type) and issubclass(options_model, Options), (
        f"{algorithm_class.__name__}.Options must subclass marlplug.Options"
    )
    build_algorithm(algorithm_class, options)
    with pytest.raises(UserError, match=r"algorithm\.no_such_option_xyz"):
        build_algorithm(algorithm_class, {**(options or {}), "no_such_option_xyz": 1})


def rollout_case(
    algorithm: Any,
    *,
    env: str = "cooperative_navigation",
    env_options: Mapping[str, Any] | None = None,
    train: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> AlgorithmCase:
    """Bind ``algorithm`` to a real env and take the first minibatch its rollouts yield.

    ``train`` sets the config's ``train:`` fields the algorithm reads (small rollouts keep it fast).
    """
    from marlplug.envs import make_env

    config = load_config(
        data={
            "seed": seed,
            "env": {"name": env, **dict(env_options or {"agents": 3})},
            "train": dict(train or {"rollout_steps": 32, "minibatch_size": 16, "n_epochs": 1}),
        }
    )
    environment = make_env(env, seed=seed, **dict(env_options or {"agents": 3}))
    program = algorithm.bind(environment, config)
    source = algorithm.rollouts(environment, program, config)
    try:
        theta, opt_state = program.init_state(seed)
        for iteration in range(MAX_WARMUP_ITERATIONS):
            for batch in source.batches(theta, iteration):
                return AlgorithmCase(program, theta, opt_state, batch.clone())
    finally:
        source.close()
    raise AssertionError(
        f"{type(algorithm).__name__}.rollouts yielded no minibatch in {MAX_WARMUP_ITERATIONS} "
        f"iterations (lower its warm-up options in the contract's options)"
    )


def check_init_state(program: LearnerProgram, *, seed: int = 0) -> None:
    """``init_state`` is ``([M, P], [M, O])``, finite and a function of the seed alone."""
    where = type(program).__name__
    theta, opt_state = program.init_state(seed)
    expected = [
        (program.num_agents, program.theta_size),
        (program.num_agents, program.opt_state_size),
    ]
    assert [tuple(theta.shape), tuple(opt_state.shape)] == expected, (
        f"{where}.init_state gave {tuple(theta.shape)}, {tuple(opt_state.shape)}; expected {expected}"
    )
    assert torch.isfinite(theta).all() and torch.isfinite(opt_state).all(), f"{where}: not finite"
    again = program.init_state(seed)
    assert torch.equal(theta, again[0]) and torch.equal(opt_state, again[1]), (
        f"{where}.init_state: the same seed gives different states"
    )
    assert not torch.equal(theta, program.init_state(seed + 1)[0]), f"{where}: seeds give one state"


def check_update(case: AlgorithmCase, *, seed: int = 0) -> None:
    """``update`` over every agent and over a reordered subset: the right shapes, finite, moving,
    bit-identical when repeated, leaving its inputs alone; a subset's rows match the full call's."""
    program = case.program
    where = type(program).__name__
    num_agents = program.num_agents
    before = (case.theta_all.clone(), case.opt_state.clone())
    everyone = list(range(num_agents))

    def update(agents: list[int]) -> Any:
        return program.update(case.theta_all, case.opt_state, case.batch, agents, seed)

    full = update(everyone)
    assert tuple(full.theta.shape) == (num_agents, program.theta_size), (
        f"{where}.update gave theta {tuple(full.theta.shape)}"
    )
    assert tuple(full.opt_state.shape) == (num_agents, program.opt_state_size), (
        f"{where}.update gave opt_state {tuple(full.opt_state.shape)}"
    )
    assert torch.isfinite(full.theta).all(), f"{where}.update: theta not finite"
    assert torch.equal(case.theta_all, before[0]) and torch.equal(case.opt_state, before[1]), (
        f"{where}.update modified its inputs in place"
    )
    repeat = update(everyone)
    assert torch.equal(full.theta, repeat.theta) and torch.equal(
        full.opt_state, repeat.opt_state
    ), f"{where}: the same update gives different bits"
    assert not torch.equal(full.theta, before[0]), f"{where}.update changed nothing"
    for name, value in full.stats.items():
        assert value.dim() == 0 or tuple(value.shape) == (num_agents,), (
            f"{where}.update: stat '{name}' has shape {tuple(value.shape)}; a stat is 0-d or one "
            f"value per updated agent"
        )
    subset = [num_agents - 1, 0] if num_agents > 1 else [0]
    part = update(subset)
    for position, agent in enumerate(subset):
        reference = torch.cat([full.theta[agent], full.opt_state[agent]])
        row = torch.cat([part.theta[position], part.opt_state[position]])
        error = float((row - reference).norm() / reference.norm().clamp_min(1e-12))
        assert error <= SUBSET_TOLERANCE, (
            f"{where}: agent {agent} updated in {subset} differs from the all-agents update "
            f"(relative {error:.2e}); an agent's update must not depend on who shares its call"
        )


def check_algorithm(
    algorithm_class: type,
    *,
    options: Mapping[str, Any] | None = None,
    env: str = "cooperative_navigation",
    env_options: Mapping[str, Any] | None = None,
    train: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> None:
    """Run the whole contract; raises ``AssertionError`` naming what failed.

    Examples:
        >>> from marlplug.algorithms.maddpg import MADDPG
        >>> check_algorithm(MADDPG, options={"hidden_sizes": [8], "minibatch_size": 8,
        ...                                  "learning_starts": 16, "steps_per_iteration": 8})
    """
    check_options(algorithm_class, options)
    algorithm = build_algorithm(algorithm_class, options)
    case = rollout_case(algorithm, env=env, env_options=env_options, train=train, seed=seed)
    check_init_state(case.program, seed=seed)
    check_update(case, seed=seed)


class AlgorithmContract:
    """Pytest base class: subclass it as ``Test...`` and set ``algorithm_class`` to run the contract.

    Examples:
        A plugin's ``tests/test_contract.py``::

            from marlplug.testing import AlgorithmContract
            from marlplug_example_algorithm import LinearIQL

            class TestLinearIQL(AlgorithmContract):
                algorithm_class = LinearIQL
                registered_name = "linear_iql"
    """

    #: The algorithm class under test.
    algorithm_class: ClassVar[type]
    #: Options to build it with (small networks and warm-ups keep the suite fast).
    options: ClassVar[Mapping[str, Any]] = {}
    #: The scenario and options the case is collected on, and the ``train:`` fields it reads.
    env: ClassVar[str] = "cooperative_navigation"
    env_options: ClassVar[Mapping[str, Any]] = {"agents": 3}
    train: ClassVar[Mapping[str, Any]] = {"rollout_steps": 32, "minibatch_size": 16, "n_epochs": 1}
    seed: ClassVar[int] = 0
    #: If set, the name the installed plugin registers the class under.
    registered_name: ClassVar[str | None] = None

    def make_case(self, algorithm: Any) -> AlgorithmCase:
        """The program, state and batch to check; default :func:`rollout_case`."""
        return rollout_case(
            algorithm, env=self.env, env_options=self.env_options, train=self.train, seed=self.seed
        )

    def test_options(self) -> None:
        check_options(self.algorithm_class, self.options)

    def test_init_state(self) -> None:
        algorithm = build_algorithm(self.algorithm_class, self.options)
        check_init_state(self.make_case(algorithm).program, seed=self.seed)

    def test_update(self) -> None:
        algorithm = build_algorithm(self.algorithm_class, self.options)
        check_update(self.make_case(algorithm), seed=self.seed)

    def test_registered(self) -> None:
        if self.registered_name is None:
            pytest.skip("registered_name not set")
        from marlplug.plugins import get_component

        assert get_component("algorithm", self.registered_name) is self.algorithm_class


__all__ = ["AlgorithmCase", "AlgorithmContract", "check_algorithm", "rollout_case"]
