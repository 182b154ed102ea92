"""Learners that die while they start: started again, a bounded number of times, with a back-off.

A learner lost while it starts (killed by a signal or the OOM killer, its Ray node gone) is the same
fault as one lost in a round, and on a cluster start-up is when it is most likely; so it is started
again. A learner killed while it computes is restarted at once; one that dies again before it is
ready waits ``backoff_s``, then twice that, and so on, for at most ``max_attempts`` starts in a row
(the count starts over once it is ready). When they are used up:

- a learner that failed of its own doing (an exit with a traceback: a program that does not load,
  an import error) stops the run with one line naming it and the last line of its traceback;
- a learner killed from outside every time is left out; the run goes on while the learners left
  can decode a round, and stops with one line when they cannot.

The run starts as soon as the learners ready can decode a round (:meth:`LearnerStarts.wait_until_decodable`);
the others join when they are ready.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from marlplug.distributed.backends.base import Backend, BackendEvent, LearnerFailure, LearnerReady
from marlplug.errors import UserError


class LearnerStartError(UserError):
    """Learners could not be started (one line: which, how often, and why)."""


@dataclass(frozen=True)
class StartPolicy:
    """How often, and how soon, a learner that dies while it starts is started again.

    Attributes:
        max_attempts: starts in a row (without becoming ready) before the learner is given up on.
        backoff_s: the wait before the second start; it doubles with every further one ...
        max_backoff_s: ... up to this.

    Examples:
        >>> policy = StartPolicy(max_attempts=5, backoff_s=0.25, max_backoff_s=1.0)
        >>> [policy.delay_s(failed) for failed in range(4)]
        [0.0, 0.25, 0.5, 1.0]
    """

    max_attempts: int = 5
    backoff_s: float = 0.25
    max_backoff_s: float = 4.0

    def delay_s(self, failed_starts: int) -> float:
        """The wait before the next start after ``failed_starts`` starts in a row that failed (0:
        the learner died after it was ready, and is restarted at once)."""
        if failed_starts <= 0:
            return 0.0
        return float(min(self.max_backoff_s, self.backoff_s * 2 ** (failed_starts - 1)))


@dataclass
class LearnerStarts:
    """Which learners are ready, which wait for their next start and which were given up on.

    The controller owns one for its backend's lifetime: every :class:`LearnerReady` and every death
    the backend reports goes to :meth:`handle`, and :meth:`restart_due` starts the learners whose
    wait is over. What happened since :meth:`take_log` was last called (failures and restarts) goes
    into the next round's record.

    Args:
        backend: the learners' backend.
        can_decode: whether the answers of these learners decode a round (the code's rank
            condition).
        active: the learners that have work (a zero row of ``C`` leaves a learner idle).
        policy: the restart policy.
    """

    backend: Backend
    can_decode: Callable[[list[int]], bool]
    active: list[int]
    policy: StartPolicy = field(default_factory=StartPolicy)
    ready: set[int] = field(default_factory=set)
    #: Starts in a row that failed, per learner (0 once it is ready).
    failed_starts: dict[int, int] = field(default_factory=dict)
    #: ``time.monotonic()`` at which each dead learner is due to start again.
    due: dict[int, float] = field(default_factory=dict)
    #: Learners left out after ``max_attempts`` starts, with the last cause.
    given_up: dict[int, str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    restarted: list[int] = field(default_factory=list)

    # ------------------------------------------------------------------ events

    def handle(self, event: BackendEvent) -> bool:
        """Take a readiness or a death into account; ``False`` for any other event (an answer, an
        update that raised), which is the caller's. Raises :class:`LearnerStartError` when a
        learner cannot be started any more and the run cannot go on."""
        if isinstance(event, LearnerReady):
            self.ready.add(event.learner)
            self.failed_starts[event.learner] = 0
            return True
        if not isinstance(event, LearnerFailure) or not event.died:
            return False
        self.died(event)
        return True

    def died(self, failure: LearnerFailure) -> None:
        """Schedule the learner's next start, or give up on it (see the module docstring)."""
        learner = failure.learner
        cause = last_line(failure.message)
        self.ready.discard(learner)
        self.failures.append(f"learner {learner}: {cause}")
        failed = self.failed_starts.get(learner, 0) + 1 if failure.while_starting else 0
        self.failed_starts[learner] = failed
        if failed < self.policy.max_attempts:
            self.due[learner] = time.monotonic() + self.policy.delay_s(failed)
            return
        attempts = f"{failed} starts in a row"
        if failure.own_fault:
            raise LearnerStartError(
                f"{self.backend.name} backend: learner {learner} cannot start ({attempts} failed): "
                f"{cause}"
            )
        self.given_up[learner] = cause
        left = [j for j in self.active if j not in self.given_up]
        # A code whose rows never decode alone completes its rounds by re-dispatch: nothing to check.
        if self.can_decode(self.active) and not self.can_decode(left):
            lost = ", ".join(f"learner {j}: {why}" for j, why in sorted(self.given_up.items()))
            raise LearnerStartError(
                f"{self.backend.name} backend: learners {sorted(self.given_up)} died while starting "
                f"{self.policy.max_attempts} times in a row ({lost}), and learners {left} alone "
                "cannot decode a round"
            )

    def restart_due(self) -> list[int]:
        """Start again every dead learner whose wait is over; the learners restarted."""
        now = time.monotonic()
        started = sorted(learner for learner, at in self.due.items() if at <= now)
        for learner in started:
            del self.due[learner]
            self.backend.restart(learner)
            self.restarted.append(learner)
        return started

    def next_start_in(self, default_s: float) -> float:
        """Seconds until the next learner is due to start (``default_s`` if none is, or later)."""
        if not self.due:
            return default_s
        return max(0.0, min(default_s, min(self.due.values()) - time.monotonic()))

    def take_log(self) -> tuple[list[str], list[int]]:
        """The failures and restarts since the last call (for a round's record)."""
        taken = (self.failures, self.restarted)
        self.failures, self.restarted = [], []
        return taken

    # ------------------------------------------------------------------ start-up

    def wait_until_decodable(self, *, poll_s: float = 0.5) -> None:
        """Return as soon as the learners ready can decode a round, or every learner with work is
        ready; restart those that die meanwhile. Raises :class:`LearnerStartError` after the
        backend's ``start_timeout_s``."""
        deadline = time.monotonic() + self.backend.start_timeout_s
        while not self.enough_ready():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self.not_ready_error()
            for event in self.backend.poll(self.next_start_in(min(remaining, poll_s))):
                self.handle(event)  # nothing else can come before the first task
            self.restart_due()

    def enough_ready(self) -> bool:
        ready = [j for j in self.active if j in self.ready]
        return len(ready) == len(self.active) or self.can_decode(ready)

    def not_ready_error(self) -> LearnerStartError:
        waiting = [j for j in self.active if j not in self.ready]
        recent = f"; last failures: {', '.join(self.failures[-3:])}" if self.failures else ""
        return LearnerStartError(
            f"{self.backend.name} backend: learners {waiting} were not ready within "
            f"{self.backend.start_timeout_s:g} s, and learners {sorted(self.ready)} alone cannot "
            f"decode a round{recent}; if they are only slow to start, raise coding.start_timeout_s"
        )


def last_line(message: str) -> str:
    """The last non-empty line of a message or traceback (its cause).

    Examples:
        >>> last_line("Traceback (most recent call last):\\n  ...\\nImportError: no module 'x'\\n")
        "ImportError: no module 'x'"
    """
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"
