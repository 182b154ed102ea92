"""One coded round on the wall clock: collect answers until they decode, re-dispatch once on timeout,
and fail with one line — never wait without a deadline.

The round waits ``round_timeout_s`` for a decodable set. Then it completes the answers in hand with
one-agent tasks (:func:`marlplug.coding.completion.completing_agents`: agents missing from the rank
*and* agents needed for a well-conditioned solve) sent to live learners, and waits one more
``round_timeout_s``. If that does not decode either, :class:`RoundTimeoutError` names the round, the
learners heard from and why their answers do not decode (rank or condition number).

A learner that dies is started again (:class:`~marlplug.distributed.learner_starts.LearnerStarts`
says when) and, once started, sent the round's task again.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from marlplug.coding import make_decoder
from marlplug.coding.completion import completing_agents
from marlplug.distributed.backends.base import Backend, BackendEvent, LearnerFailure, Task
from marlplug.distributed.learner import LearnerAnswer, LearnerResult
from marlplug.distributed.learner_starts import LearnerStarts, last_line
from marlplug.distributed.rounds import RoundLog
from marlplug.errors import UserError

#: How long one poll of the backend may block: keeps the deadline checks frequent.
POLL_S = 0.5


class RoundTimeoutError(UserError):
    """A round could not be decoded within its timeout, even after re-dispatching.

    ``round_log`` holds what the round saw until it gave up (for the timeline).
    """

    def __init__(self, message: str, round_log: RoundLog | None = None) -> None:
        super().__init__(message)
        self.round_log = round_log


class LearnerError(RuntimeError):
    """A learner's update raised; the message carries the learner's traceback."""


def check_round_timeout(round_timeout_s: float) -> float:
    """``round_timeout_s`` if it is a finite number of seconds > 0, else a one-line error.

    An infinite timeout would let a learner that never answers hang the run for good.

    Examples:
        >>> check_round_timeout(5)
        5.0
        >>> check_round_timeout(float("inf"))
        Traceback (most recent call last):
        ...
        marlplug.errors.UserError: coding.round_timeout_s: must be a finite number of seconds > 0 (a learner that never answers would hang the run), got inf
    """
    value = float(round_timeout_s)
    if not (math.isfinite(value) and value > 0):
        raise UserError(
            "coding.round_timeout_s: must be a finite number of seconds > 0 (a learner that never "
            f"answers would hang the run), got {value:g}"
        )
    return value


@dataclass
class WallRound:
    """The state of one round in progress on a backend (see the module docstring)."""

    backend: Backend
    matrix: np.ndarray
    scheme: Any
    round_index: int
    seed: int
    timeout_s: float
    active_learners: list[int]
    delays: dict[int, float]
    starts: LearnerStarts
    start: float = field(default_factory=time.perf_counter)
    answers: dict[int, LearnerAnswer] = field(default_factory=dict)
    arrivals: dict[int, float] = field(default_factory=dict)
    compute_s: dict[int, float] = field(default_factory=dict)
    redispatched: list[int] | None = None
    answered: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.decoder = make_decoder(self.matrix, scheme=self.scheme)

    @property
    def num_learners(self) -> int:
        return int(self.matrix.shape[0])

    def run(self) -> Any:
        """Wait until the answers decode; returns the decoder holding them."""
        self.starts.restart_due()  # learners whose wait ended between rounds: tasks follow
        for learner in self.active_learners:
            self.backend.submit(
                Task(
                    learner,
                    self.round_index,
                    learner,
                    self.matrix[learner],
                    self.seed,
                    self.delays[learner],
                )
            )
        deadline = time.monotonic() + self.timeout_s
        while not self.decoder.decodable:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if self.redispatched is not None:
                    raise self.timeout_error()
                self.redispatch()
                deadline = time.monotonic() + self.timeout_s
                continue
            for event in self.backend.poll(self.starts.next_start_in(min(remaining, POLL_S))):
                self.handle(event)
            for learner in self.starts.restart_due():
                self.resend(learner)
        return self.decoder

    def handle(self, event: BackendEvent) -> None:
        """Record one answer; a learner ready or dead goes to :attr:`starts`."""
        if self.starts.handle(event):
            return
        if isinstance(event, LearnerFailure):
            # An exception in the update is a bug, not a straggler: every replica would raise it
            # again, so stop now with the learner's own message.
            raise LearnerError(
                f"round {self.round_index}: learner {event.learner} failed: "
                f"{last_line(event.message)}\n{event.message.strip()}"
            )
        if not isinstance(event, LearnerResult):
            return
        if event.round_index != self.round_index or event.task_id in self.answers:
            return  # a late answer of an earlier round, or a duplicate
        self.answers[event.task_id] = event.answer
        self.answered.add(event.learner)
        self.arrivals[event.task_id] = time.perf_counter() - self.start
        self.compute_s[event.task_id] = event.answer.compute_s
        self.decoder.add(event.task_id, event.answer.coded)

    def resend(self, learner: int) -> None:
        """Send a restarted learner this round's task again, unless it answered it already."""
        if learner in self.answered or learner not in self.active_learners:
            return
        row = self.matrix[learner]
        self.backend.submit(Task(learner, self.round_index, learner, row, self.seed))

    def redispatch(self) -> None:
        """Complete the answers in hand with one-agent tasks on live learners.

        The new decoder runs over ``[C; I_M]`` (task ``N + i`` computes agent ``i`` alone) and already
        holds the answers received.
        """
        num_agents = self.matrix.shape[1]
        learner_rows = [task for task in self.answers if task < self.num_learners]
        agents = completing_agents(
            self.matrix, learner_rows, max_condition=self.decoder.max_condition
        )
        augmented = np.vstack([self.matrix, np.eye(num_agents)])
        self.decoder = make_decoder(augmented, max_condition=self.decoder.max_condition)
        for task_id, answer in self.answers.items():
            self.decoder.add(task_id, answer.coded)
        candidates = [j for j in range(self.num_learners) if self.backend.alive(j)]
        # Learners that answered are idle; a straggler may still be sitting on its delay.
        preferred = [j for j in candidates if j in self.answered] + [
            j for j in candidates if j not in self.answered
        ]
        if not preferred:
            preferred = list(self.starts.restarted) or list(range(self.num_learners))
        for position, agent in enumerate(agents):
            task_id = self.num_learners + agent
            learner = preferred[position % len(preferred)]
            self.backend.submit(
                Task(learner, self.round_index, task_id, augmented[task_id], self.seed)
            )
        self.redispatched = agents

    def log(self, decode_s: float = 0.0, *, wait_s: float | None = None) -> RoundLog:
        """The round's record so far (``wait_s``: until the answers decoded; default: until now)."""
        if wait_s is None:
            wait_s = time.perf_counter() - self.start
        return RoundLog(
            round_index=self.round_index,
            clock="wall",
            stragglers=sorted(j for j, d in self.delays.items() if d > 0),
            learners_used=sorted(self.answers),
            arrivals=dict(self.arrivals),
            compute_s=dict(self.compute_s),
            wait_s=wait_s,
            decode_s=decode_s,
            round_s=wait_s + decode_s,
            failures=list(self.starts.failures),
            redispatched_agents=list(self.redispatched or []),
            restarted=list(self.starts.restarted),
        )

    def timeout_error(self) -> RoundTimeoutError:
        """The one-line error of a round that did not decode after re-dispatching."""
        heard = sorted(self.answered)
        reason = self.decoder.why_not() or "no decodable answer set"
        return RoundTimeoutError(
            f"round {self.round_index}: not decodable {self.timeout_s:g} s after re-dispatching "
            f"agents {self.redispatched}; heard from learners {heard} "
            f"({len(self.answers)} answers): {reason}",
            self.log(),
        )
