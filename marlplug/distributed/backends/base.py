"""The contract between the controller and a learner backend: broadcast once, submit tasks, poll.

What is broadcast is the round's ``state``, ``[M, P + O]`` (:func:`marlplug.distributed.learner.state_rows`),
and its minibatch; a task names a row of ``C`` and the round's seed. A backend reports facts (a learner
ready, an answer, a learner dead and why); what to do about a dead learner is the controller's
decision (:mod:`marlplug.distributed.learner_starts`).
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
    """A learner died or raised; ``message`` says how.

    Attributes:
        died: the learner is gone (its process exited, its actor died), as opposed to an update
            that raised in a live learner.
        while_starting: it died before it reported ready (see :class:`LearnerReady`).
        own_fault: it died of its own doing (an exit with a traceback, an error while loading its
            program or in its constructor): a restart will most likely fail the same way. False
            for a fault from outside (a signal, a lost node, an operator), which a restart cures.
    """

    learner: int
    round_index: int | None
    message: str
    died: bool
    while_starting: bool = False
    own_fault: bool = False


@dataclass(frozen=True)
class LearnerReady:
    """A learner (started or restarted) has loaded its program and takes tasks."""

    learner: int


#: What :meth:`Backend.poll` reports.
BackendEvent = LearnerResult | LearnerFailure | LearnerReady


class Backend(Protocol):
    """Runs learners. Every method returns within its timeout; :meth:`close` stops all it started.

    Starting never waits for learners to be ready: each reports :class:`LearnerReady` through
    :meth:`poll` when it is (or a :class:`LearnerFailure` when it dies first); tasks submitted to a
    learner still starting wait for it.
    """

    #: ``"local"`` or ``"ray"``: the start of the backend's error messages.
    name: str
    num_learners: int
    #: How long the controller waits for enough learners to be ready before the first round.
    start_timeout_s: float

    def start(self, program: LearnerProgram) -> None:
        """Get ready to run ``program`` (raises a clear error if the backend cannot run at all)."""
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

    def poll(self, timeout_s: float) -> list[BackendEvent]:
        """What arrived within ``timeout_s`` (empty on timeout). A learner's death is reported once."""
        ...

    def alive(self, learner: int) -> bool:
        """Whether learner ``learner`` runs (or is starting): a task sent to it can be answered."""
        ...

    def restart(self, learner: int) -> None:
        """Replace a dead learner; does not wait for it to be ready."""
        ...

    def close(self) -> None:
        """Stop every learner this backend started (idempotent)."""
        ...
