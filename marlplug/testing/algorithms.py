"""The contract every learner algorithm must meet, as a pytest base class and as functions.

A learner algorithm is registered through ``marlplug_algorithms``. Built from its ``Options``, it
yields an *update program* (:class:`marlplug.distributed.learner.UpdateProgram`): ``update(theta_all,
agents, batch, seeds)`` returns the new ``[len(agents), D]`` state rows of any subset of agents — the
pure per-agent update ``U_i`` that the centralized updater and every coded learner run. An
off-policy algorithm (one with ``bind(agents)``, like ``maddpg``) also gives the runner
``init_state(seed)``, ``act(...)`` and ``env_scale(...)``; the suite builds its case from a real
env for it. Plugin authors subclass :class:`AlgorithmContract` (or call :func:`check_algorithm`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
import torch
from tensordict import TensorDict, TensorDictBase

from marlplug.algorithms.env_adapter import MultiAgentEnvAdapter
from marlplug.algorithms.row_bridge import runner_program
from marlplug.config import Options, validate_options
from marlplug.errors import UserError
from marlplug.seeding import agent_seed

#: A subset's rows must match the same agents' rows of an all-agents call this closely (relative
#: norm): the shapes differ, so BLAS may round differently — never bit-identity across shapes.
SUBSET_TOLERANCE = 1e-5


@dataclass
class AlgorithmCase:
    """What the update checks run on.

    Attributes:
        program: the update program (``num_agents``, ``state_size``, ``update``).
        theta_all: ``[M, D]``: every agent's state row.
        batch: one minibatch in the program's format.
    """

    program: Any
    theta_all: torch.Tensor
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


def off_policy_case(
    algorithm: Any,
    *,
    env: str = "cooperative_navigation",
    env_options: Mapping[str, Any] | None = None,
    seed: int = 0,
    steps: int = 16,
) -> AlgorithmCase:
    """A case for an off-policy algorithm: bind it to a real env's agents and collect ``steps``
    transitions with its exploring actors (the runner's batch keys: ``obs``, ``action``,
    ``reward``, ``next_obs``, ``terminated``)."""
    from marlplug.envs import make_env

    environment = make_env(env, seed=seed, **dict(env_options or {"agents": 3}))
    adapter = MultiAgentEnvAdapter(environment)
    program = runner_program(algorithm, environment)
    theta = program.init_state(seed)
    generator = torch.Generator().manual_seed(seed)
    columns: dict[str, list[torch.Tensor]] = {key: [] for key in TRANSITION_KEYS}
    td = environment.reset()
    for _ in range(steps):
        obs = adapter.observations(td)
        actions = program.act(theta, obs, generator=generator, explore=True)
        adapter.write_actions(td, program.env_scale(actions))
        stepped, td = environment.step_and_maybe_reset(td)
        following = stepped["next"]
        values = (obs, actions, adapter.rewards(following), adapter.observations(following))
        for key, value in zip(TRANSITION_KEYS, values, strict=False):
            columns[key].append(value)
        columns["terminated"].append(adapter.terminated(following))
    data = {key: torch.cat(parts) for key, parts in columns.items()}
    batch = TensorDict(data, batch_size=[data["obs"].shape[0]])
    return AlgorithmCase(program=program, theta_all=theta, batch=batch)


#: The batch keys an off-policy program's ``update`` receives, ``[B, M, ...]``.
TRANSITION_KEYS = ("obs", "action", "reward", "next_obs", "terminated")


def check_off_policy_program(algorithm: Any, case: AlgorithmCase, *, seed: int = 0) -> None:
    """``bind``'s program: ``init_state`` is ``[M, D]``, finite and a function of the seed; ``act``
    gives ``[E, M, A]`` actions, the same for the same generator seed."""
    program = case.program
    theta = program.init_state(seed)
    where = type(program).__name__
    assert tuple(theta.shape) == (program.num_agents, program.state_size), (
        f"{where}.init_state gave {tuple(theta.shape)}; expected (num_agents, state_size)"
    )
    assert torch.isfinite(theta).all(), f"{where}.init_state has non-finite entries"
    assert torch.equal(theta, program.init_state(seed)), f"{where}.init_state: same seed differs"
    assert not torch.equal(theta, program.init_state(seed + 1)), f"{where}: seeds give one state"
    obs = case.batch["obs"][:2]
    draws = [
        program.act(theta, obs, generator=torch.Generator().manual_seed(seed), explore=True)
        for _ in range(2)
    ]
    assert tuple(draws[0].shape[:2]) == (2, program.num_agents), (
        f"{where}.act gave {tuple(draws[0].shape)} for observations {tuple(obs.shape)}"
    )
    assert torch.equal(draws[0], draws[1]), f"{where}.act: the same generator seed differs"
    greedy = program.act(theta, obs, explore=False)
    assert torch.equal(greedy, program.act(theta, obs, explore=False)), f"{where}: greedy differs"
    assert program.env_scale(greedy).shape == greedy.shape, f"{where}.env_scale changed the shape"


def _update(case: AlgorithmCase, agents: list[int], seed: int) -> torch.Tensor:
    seeds = [agent_seed(seed, 0, agent) for agent in agents]
    return case.program.update(case.theta_all, agents, case.batch, seeds)


def check_update(case: AlgorithmCase, *, seed: int = 0) -> None:
    """``update`` over every agent and over a reordered subset: ``[len(agents), D]``, finite, moving,
    bit-identical when repeated, leaving its input alone; a subset's rows match the full call's."""
    program = case.program
    num_agents, size = program.num_agents, program.state_size
    where = type(program).__name__
    assert tuple(case.theta_all.shape) == (num_agents, size), (
        f"theta_all is {tuple(case.theta_all.shape)}; expected (num_agents, state_size)"
    )
    before = case.theta_all.clone()
    everyone = list(range(num_agents))
    full = _update(case, everyone, seed)
    assert tuple(full.shape) == (num_agents, size), f"{where}.update gave {tuple(full.shape)}"
    assert full.dtype.is_floating_point and torch.isfinite(full).all(), f"{where}: not finite"
    assert torch.equal(case.theta_all, before), f"{where}.update modified theta_all in place"
    assert torch.equal(full, _update(case, everyone, seed)), f"{where}: the same update differs"
    assert not torch.equal(full, before), f"{where}.update changed nothing"
    subset = [num_agents - 1, 0] if num_agents > 1 else [0]
    rows = _update(case, subset, seed)
    assert tuple(rows.shape) == (len(subset), size), f"{where}.update({subset}): {rows.shape}"
    for row, agent in zip(rows, subset, strict=True):
        error = float((row - full[agent]).norm() / full[agent].norm().clamp_min(1e-12))
        assert error <= SUBSET_TOLERANCE, (
            f"{where}: agent {agent} updated in {subset} differs from the all-agents update "
            f"(relative {error:.2e}); an agent's update must not depend on who shares its call"
        )


def check_algorithm(
    algorithm_class: type,
    *,
    options: Mapping[str, Any] | None = None,
    case: AlgorithmCase | None = None,
    env: str = "cooperative_navigation",
    env_options: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> None:
    """Run the whole contract; raises ``AssertionError`` naming what failed.

    Args:
        algorithm_class: the class a plugin registers.
        options: options to build it with.
        case: the program, state and batch to update; default: :func:`off_policy_case` (for
            algorithms with ``bind``) on ``env`` built with ``env_options``.
        env: the mpe scenario the default case collects transitions from.
        env_options: its options (default: 3 agents).
        seed: the seed of the update.

    Examples:
        >>> from marlplug.algorithms.maddpg import MADDPG
        >>> check_algorithm(MADDPG, options={"hidden_sizes": [8]})
    """
    check_options(algorithm_class, options)
    algorithm = build_algorithm(algorithm_class, options)
    if case is None:
        case = off_policy_case(algorithm, env=env, env_options=env_options, seed=seed)
        check_off_policy_program(algorithm, case, seed=seed)
    check_update(case, seed=seed)


class AlgorithmContract:
    """Pytest base class: subclass it as ``Test...`` and set ``algorithm_class`` to run the contract.

    Override :meth:`make_case` for an algorithm without ``bind`` (see ``tests/testing`` for ``ppo``).

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
    #: Options to build it with (small networks keep the suite fast).
    options: ClassVar[Mapping[str, Any]] = {}
    #: The mpe scenario and options the default :meth:`make_case` collects transitions from.
    env: ClassVar[str] = "cooperative_navigation"
    env_options: ClassVar[Mapping[str, Any]] = {"agents": 3}
    seed: ClassVar[int] = 0
    #: If set, the name the installed plugin registers the class under.
    registered_name: ClassVar[str | None] = None

    def make_case(self, algorithm: Any) -> AlgorithmCase:
        """The program, state and batch to check; default :func:`off_policy_case`."""
        return off_policy_case(
            algorithm, env=self.env, env_options=self.env_options, seed=self.seed
        )

    def test_options(self) -> None:
        check_options(self.algorithm_class, self.options)

    def test_off_policy_program(self) -> None:
        algorithm = build_algorithm(self.algorithm_class, self.options)
        if not hasattr(algorithm, "bind"):
            pytest.skip("not an off-policy algorithm (no bind)")
        check_off_policy_program(algorithm, self.make_case(algorithm), seed=self.seed)

    def test_update(self) -> None:
        algorithm = build_algorithm(self.algorithm_class, self.options)
        check_update(self.make_case(algorithm), seed=self.seed)

    def test_registered(self) -> None:
        if self.registered_name is None:
            pytest.skip("registered_name not set")
        from marlplug.plugins import get_component

        assert get_component("algorithm", self.registered_name) is self.algorithm_class


__all__ = ["AlgorithmCase", "AlgorithmContract", "check_algorithm", "off_policy_case"]
