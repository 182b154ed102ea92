"""``train.max_minutes``: the wall time a run has spent, across resumes, against its budget.

The orchestrator asks at every update (iteration) boundary whether the budget is spent; a run that
stops on it ends as after its last update. Each checkpoint stores :meth:`WallBudget.elapsed_s`, so
a resumed run continues the clock of its earlier parts (up to their last checkpoint) instead of
getting the whole budget again.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class WallBudget:
    """Wall time spent by a run (this part and, for a resumed run, its earlier ones) against
    ``train.max_minutes``.

    Args:
        max_minutes: the budget (``None``: none, never spent).
        earlier_s: seconds the run's earlier parts spent (from the checkpoint of a resumed run).
        clock: seconds from some fixed point (``time.monotonic``); the clock starts at creation.

    Examples:
        >>> WallBudget(None, earlier_s=1e9).spent()
        False
        >>> budget = WallBudget(20.0, earlier_s=1200.0)
        >>> budget.spent_before(), budget.spent(), budget.elapsed_s() >= 1200.0
        (True, True, True)
        >>> budget.stop_note(update=37, updates=60)
        'stopped at update 37 of 60: train.max_minutes 20 reached (20.0 min)'
    """

    def __init__(
        self,
        max_minutes: float | None,
        *,
        earlier_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_minutes = max_minutes
        self.earlier_s = earlier_s
        self._clock = clock
        self._start = clock()

    def elapsed_s(self) -> float:
        """Seconds spent by the run so far, its earlier parts included."""
        return self.earlier_s + self._clock() - self._start

    def seconds_left(self) -> float | None:
        """Seconds of the budget not yet spent (``None``: no budget; never below 0).

        Examples:
            >>> WallBudget(None).seconds_left() is None
            True
            >>> WallBudget(1.0, earlier_s=90.0).seconds_left()
            0.0
        """
        if self.max_minutes is None:
            return None
        return max(0.0, self.max_minutes * 60.0 - self.elapsed_s())

    def spent(self) -> bool:
        """Whether the run has used its whole budget (never without one)."""
        return self.max_minutes is not None and self.elapsed_s() >= self.max_minutes * 60.0

    def spent_before(self) -> bool:
        """Whether the run's earlier parts used the whole budget (a resumed run with nothing left
        to train)."""
        return self.max_minutes is not None and self.earlier_s >= self.max_minutes * 60.0

    def stop_note(self, *, update: int, updates: int, before_resume: bool = False) -> str:
        """Why a run stopped after ``update`` of its ``updates`` (``train.updates``), in one line;
        ``before_resume``: the budget was already spent when this part started."""
        elapsed = self.elapsed_s()
        spent = f"{elapsed / 60.0:.1f} min" if elapsed >= 60.0 else f"{elapsed:.2f} s"
        note = (
            f"stopped at update {update} of {updates}: train.max_minutes {self.max_minutes:g} "
            f"reached ({spent})"
        )
        if before_resume:
            note += " before this resume; --set train.max_minutes=M with a larger M to go on"
        return note
