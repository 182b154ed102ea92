"""Where a round's update runs: every agent in this process, or on coded learners.

An executor turns ``(theta, opt_state, minibatch, round index)`` into the round's new state. Both run
the same :meth:`~marlplug.algorithms.protocol.LearnerProgram.update` with the same round seed
(:func:`round_seed`), so a coded run equals a centralized one up to the decoder's round-off:

- :class:`CentralizedExecutor`: one call with every agent, in process.
- :class:`CodedExecutor`: the controller of :mod:`marlplug.distributed` sends ``theta``, the opt
  state and the minibatch to N learners, each updates the agents its row of the assignment matrix
  names, and the controller decodes the ``[M, P + O]`` rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import torch
from tensordict import TensorDictBase

from marlplug.algorithms.protocol import LearnerProgram
from marlplug.coding.stragglers import StragglerModel
from marlplug.config import CodingSection, MarlplugConfig
from marlplug.distributed.assignment import coded_assignment
from marlplug.distributed.backends.local import LocalBackend
from marlplug.distributed.controller import CodedController, RoundLog
from marlplug.errors import ConfigError
from marlplug.seeding import derive_seed

if TYPE_CHECKING:
    from marlplug.distributed.backends.base import Backend


def round_seed(seed: int, round_index: int) -> int:
    """The seed every learner passes to ``update`` in round ``round_index`` of a run seeded ``seed``.

    >>> round_seed(0, 1) == round_seed(0, 1) != round_seed(0, 2)
    True
    """
    return derive_seed(seed, round_index)


@dataclass
class RoundResult:
    """A round's outcome: every agent's new rows, the learners' statistics and (coded) its record."""

    theta: torch.Tensor
    opt_state: torch.Tensor
    stats: Mapping[str, torch.Tensor] = field(default_factory=dict)
    log: RoundLog | None = None


class Executor(Protocol):
    """Runs one update round for every agent (see the module docstring)."""

    def update(
        self, theta: torch.Tensor, opt_state: torch.Tensor, batch: TensorDictBase, round_index: int
    ) -> RoundResult: ...

    def skip_rounds(self, rounds: int) -> None:
        """Continue after ``rounds`` rounds run before (a resumed run)."""
        ...

    def close(self) -> None: ...


class CentralizedExecutor:
    """Every agent's update in one call, in this process: the reference a coded run must match.

    Examples:
        >>> executor = CentralizedExecutor(program, seed=0)  # doctest: +SKIP
        >>> result = executor.update(theta, opt_state, batch, round_index=0)  # doctest: +SKIP
    """

    def __init__(self, program: LearnerProgram, *, seed: int) -> None:
        self.program = program
        self.seed = seed
        self.agents = list(range(program.num_agents))

    def update(
        self, theta: torch.Tensor, opt_state: torch.Tensor, batch: TensorDictBase, round_index: int
    ) -> RoundResult:
        seed = round_seed(self.seed, round_index)
        out = self.program.update(theta, opt_state, batch, self.agents, seed)
        return RoundResult(out.theta, out.opt_state, dict(out.stats))

    def skip_rounds(self, rounds: int) -> None:
        """Nothing to skip: a centralized round draws from ``round_seed`` alone."""

    def close(self) -> None:
        """Nothing to release."""


class CodedExecutor:
    """Rounds on ``config.coding``'s learners through the coded controller."""

    def __init__(self, config: MarlplugConfig, program: LearnerProgram) -> None:
        self.program = program
        self.seed = config.seed
        self.controller = build_controller(config, program)

    def update(
        self, theta: torch.Tensor, opt_state: torch.Tensor, batch: TensorDictBase, round_index: int
    ) -> RoundResult:
        seed = round_seed(self.seed, round_index)
        out, log = self.controller.update(theta, opt_state, batch, round_index, seed=seed)
        return RoundResult(out.theta, out.opt_state, dict(out.stats), log)

    def skip_rounds(self, rounds: int) -> None:
        """Move the straggler draws past the rounds already run: a resumed run meets the same
        stragglers as one never stopped."""
        self.controller.skip_rounds(rounds)

    def close(self) -> None:
        self.controller.close()


def make_executor(config: MarlplugConfig, program: LearnerProgram) -> Executor:
    """Coded learners when ``config`` has a ``coding:`` section, else every agent in process."""
    if config.coding is None:
        return CentralizedExecutor(program, seed=config.seed)
    return CodedExecutor(config, program)


def make_backend(coding: CodingSection) -> Backend | None:
    """The learner backend a ``coding:`` section asks for (``None`` for the simulated clock), waiting
    ``coding.start_timeout_s`` for its learners to start.

    Examples:
        >>> from marlplug.config import load_config
        >>> coding = {"scheme": "mds", "learners": 5, "start_timeout_s": 600}
        >>> backend = make_backend(load_config(data={"coding": coding}).coding)
        >>> backend.name, backend.num_learners, backend.start_timeout_s
        ('local', 5, 600.0)
    """
    if coding.clock == "simulated":
        return None
    if coding.backend == "ray":
        from marlplug.distributed.backends.ray import RayBackend

        return RayBackend(
            coding.learners, address=coding.ray_address, start_timeout_s=coding.start_timeout_s
        )
    return LocalBackend(coding.learners, start_timeout_s=coding.start_timeout_s)


def build_controller(config: MarlplugConfig, program: LearnerProgram) -> CodedController:
    """The coded controller for ``config.coding`` and a bound ``program``."""
    coding = config.coding
    if coding is None:
        raise ConfigError("coding: this run has no coding section")
    scheme, matrix = coded_assignment(coding, program.num_agents, config.seed)
    stragglers = StragglerModel.from_config(coding.stragglers, seed=config.seed)
    return CodedController(
        program,
        matrix,
        make_backend(coding),
        scheme=scheme,
        stragglers=stragglers,
        clock=coding.clock,
        round_timeout_s=coding.round_timeout_s,
    )
