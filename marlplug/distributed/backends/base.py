"""The contract between the controller and a learner backend: broadcast once, submit tasks, poll.

What is broadcast is the round's ``state``, ``[M, P + O]`` (:func:`marlplug.distributed.learner.state_rows`),
and its minibatch; a task names a row of ``C`` and the round's seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
from tensordict import TensorDictBase

from marlplug.algorithms.protocol import LearnerProgram
from marlplug.distributed.learner import LearnerResult


@dataclass(frozen=True)
class Task:
    """Ask learner ``learner`` for ``Σ_i row[i] · U_i`` in round ``round_index`` (whose seed is
    ``seed``), late by ``delay_s``."""

    learner: int
    round_index: int
    task_id: int
    row: np.ndarray
    seed: int
    delay_s: float = 0.0


@dataclass(frozen=True)
class LearnerFailure:
    """A learner died or raised; ``message`` says how."""

    learner: int
    round_index: int | None
    message: str
    died: bool


class Backend(Protocol):
    """Runs learners. Every method returns within its timeout; :meth:`close` stops all it started."""

    num_learners: int

    def start(self, program: LearnerProgram) -> None:
        """Start every learner (bounded wait; raises a clear error if they cannot start)."""
        ...

    def prepare(self, state: torch.Tensor, batch: TensorDictBase) -> None:
        """Allocate what depends on the data's shapes (called before a round's clock starts)."""
        ...

    def broadcast(self, round_index: int, state: torch.Tensor, batch: TensorDictBase) -> None:
        """Make this round's state rows and minibatch available to every learner, once."""
        ...

    def submit(self, task: Task) -> None:
        """Send one task (uses the data of the last :meth:`broadcast`)."""
        ...

    def poll(self, timeout_s: float) -> list[LearnerResult | LearnerFailure]:
        """What arrived within ``timeout_s`` (empty on timeout)."""
        ...

    def restart(self, learner: int) -> None:
        """Replace a dead learner; does not wait for it to be ready."""
        ...

    def close(self) -> None:
        """Stop every learner this backend started (idempotent)."""
        ...
