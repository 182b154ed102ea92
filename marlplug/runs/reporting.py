"""Progress on the terminal: the bar of a training run (with the live return) and of a benchmark.

The files a run writes are :mod:`marlplug.runs.metrics_files`; its summary and learning curve,
:mod:`marlplug.runs.summary`.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from marlplug.runs.stats import ReturnPoint


#: Least seconds between two redraws of a bar drawn only in ``advance`` (a bench's): its steps can be
#: milliseconds apart, and a redraw costs about a millisecond.
REDRAW_EVERY_S = 0.1


class StepProgress:
    """A rich progress bar over ``total`` steps of long work, or nothing when ``show`` is false.

    The one progress display of marlplug: training runs (:class:`ProgressBar`) and the benchmarks
    (:func:`stderr_progress`). A context manager; ``advance()`` counts steps done and can replace the
    text after the count.

    Args:
        show: draw the bar.
        total: steps in the whole run (``None``: not known yet, shown as ``?`` until
            :meth:`set_total`).
        completed: steps already done (a resumed run).
        label: the word in front of the bar.
        description: the text after the count until an ``advance`` replaces it.
        console: where to draw (default: rich's console, on stdout).
        redraw_every_s: ``None``: a background thread redraws ten times a second (rich's default).
            A number: the bar is redrawn only inside ``advance``, at most that often (always on the
            last step and on a new description without a step), so nothing runs between two calls,
            e.g. while a benchmark times something.
        transient: erase the bar when done.
        redirect_stdout: while the bar is drawn, print what is written to ``sys.stdout`` above it
            (through ``console``); leave off when stdout goes elsewhere than the bar (a pipe).

    Examples:
        >>> import io
        >>> from rich.console import Console
        >>> screen = io.StringIO()
        >>> console = Console(file=screen, force_terminal=True, width=80, color_system=None)
        >>> with StepProgress(True, 2, label="bench", console=console, redraw_every_s=0) as progress:
        ...     progress.advance("round 1")
        ...     progress.advance("round 2")
        >>> "2/2 round 2" in screen.getvalue()
        True
    """

    def __init__(
        self,
        show: bool,
        total: int | None,
        *,
        completed: int = 0,
        label: str,
        description: str = "",
        console: Console | None = None,
        redraw_every_s: float | None = None,
        transient: bool = False,
        redirect_stdout: bool = True,
    ) -> None:
        self.show, self.total, self.done, self.label = show, total, completed, label
        self.description, self.console = description, console
        self.redraw_every_s, self.transient = redraw_every_s, transient
        self.redirect_stdout = redirect_stdout
        self.bar: Any = None
        self.task: Any = None
        self.last_redraw = 0.0

    def __enter__(self) -> StepProgress:
        if self.show:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn(f"[bold]{self.label}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.description}"),
                TimeRemainingColumn(),
                console=self.console,
                auto_refresh=self.redraw_every_s is None,
                transient=self.transient,
                redirect_stdout=self.redirect_stdout,
            )
            self.bar.start()
            self.task = self.bar.add_task(self.description, total=self.total, completed=self.done)
            self.last_redraw = time.monotonic()
        return self

    def advance(self, description: str | None = None, *, steps: int = 1) -> None:
        """Count ``steps`` more done (0: only show a new ``description``, e.g. the next phase)."""
        self.done += steps
        if self.bar is None:
            return
        self.bar.update(self.task, advance=steps, description=description)
        if self.redraw_every_s is not None and self._redraw_due(steps):
            self.bar.refresh()
            self.last_redraw = time.monotonic()

    def set_total(self, total: int) -> None:
        """Change the steps in the whole run (e.g. a new estimate of where a time budget ends it);
        shown at the next redraw."""
        self.total = total
        if self.bar is not None:
            self.bar.update(self.task, total=total)

    def _redraw_due(self, steps: int) -> bool:
        # The last step and a new phase always show; steps in between at most every redraw_every_s.
        waited = time.monotonic() - self.last_redraw
        last = self.total is not None and self.done >= self.total
        return steps == 0 or last or waited >= (self.redraw_every_s or 0.0)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def stderr_progress(total: int, *, label: str) -> StepProgress:
    """The progress bar of a benchmark (``marlplug bench ...``): on stderr, so ``--json`` on stdout
    stays clean, and only when stderr is an interactive terminal.

    Rich alone would print the finished bar (or an empty line) once to a file or pipe, and it takes
    ``FORCE_COLOR`` (set in many CI setups) for a terminal; so stderr must also be a real TTY, and
    neither ``TERM=dumb`` nor ``TTY_COMPATIBLE=0``. The bar is redrawn only in ``advance``, at most
    every :data:`REDRAW_EVERY_S` and never from a thread, so call ``advance`` between timed sections
    and the timings stay the program's own. It is erased when done.

    Examples:
        >>> with stderr_progress(3, label="bench demo") as progress:  # stderr is no TTY here
        ...     progress.show
        False
    """
    from rich.console import Console

    console = Console(stderr=True)
    return StepProgress(
        _is_interactive(console),
        total,
        label=label,
        console=console,
        redraw_every_s=REDRAW_EVERY_S,
        transient=True,
        # A pipe or file on stdout keeps its bytes; on the same terminal, prints go above the bar.
        redirect_stdout=_isatty(sys.stdout),
    )


def _is_interactive(console: Console) -> bool:
    return console.is_interactive and _isatty(console.file)


def _isatty(stream: IO[str] | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class ProgressBar:
    """A rich progress bar with the live return (per agent and for the team), or nothing when
    ``show`` is false.

    Used as a context manager that yields ``advance(returns)``: one step done, and the latest
    :class:`~marlplug.runs.stats.ReturnPoint` (``None``: no episode finished, the last value stays).

    With a wall-time budget (``seconds_left``, ``train.max_minutes``) the bar's total is where the
    run is expected to stop: ``total`` or, when the budget runs out first, the steps done plus the
    budget left at this session's pace. A run given ``train.updates=1000000`` to train for 20
    minutes then fills its bar in 20 minutes and shows the time left, not a count to a million;
    until its first step sets the pace, the bar shows its total as ``?``.

    Args:
        show: draw the bar.
        total: steps in the whole run (a resumed run that already did more shows its own count).
        completed: steps already done (a resumed run).
        label: the word in front of the bar.
        latest: the last return before this session (a resumed run), shown until a new one.
        seconds_left: the wall-time budget not yet spent (``None`` from it: no budget).
        clock: seconds from some fixed point (``time.monotonic``), for this session's pace.

    Examples:
        >>> from marlplug.runs.stats import ReturnPoint
        >>> with ProgressBar(False, total=3, completed=0) as advance:
        ...     advance(ReturnPoint(frames=10, per_agent=-0.5, team=-1.5))

        A step took 10 s and 35 s of the budget are left: the run will stop after 5 steps.

        >>> ticks = iter([0.0, 10.0])
        >>> bar = ProgressBar(False, 10**6, 0, seconds_left=lambda: 35.0, clock=lambda: next(ticks))
        >>> with bar as advance:
        ...     advance(None)
        >>> bar.steps.total
        5
    """

    def __init__(
        self,
        show: bool,
        total: int,
        completed: int,
        *,
        label: str = "train",
        latest: ReturnPoint | None = None,
        seconds_left: Callable[[], float | None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.latest = "-"
        self._remember(latest)
        self.total, self.seconds_left, self.clock = max(total, completed), seconds_left, clock
        self.started_at, self.started_done = 0.0, completed
        budgeted = seconds_left is not None and seconds_left() is not None
        self.steps = StepProgress(
            show,
            None if budgeted else self.total,
            completed=completed,
            label=label,
            description=f"return per agent: {self.latest}",
        )

    def _remember(self, returns: ReturnPoint | None) -> None:
        if returns is not None and returns.per_agent == returns.per_agent:  # not NaN
            self.latest = f"{returns.per_agent:.3f} (team {returns.team:.3f})"

    def __enter__(self) -> Callable[[ReturnPoint | None], None]:
        self.started_at = self.clock()
        self.steps.__enter__()
        return self.advance

    def advance(self, returns: ReturnPoint | None) -> None:
        """Count one step done and show ``returns`` (kept from before when there are none)."""
        self._remember(returns)
        self._estimate_total()
        self.steps.advance(f"return per agent: {self.latest}")

    def _estimate_total(self) -> None:
        # Called before the step is counted: done + 1 steps are finished at this point.
        left = self.seconds_left() if self.seconds_left is not None else None
        if left is None:
            return
        done = self.steps.done + 1
        pace = (self.clock() - self.started_at) / (done - self.started_done)
        # The run checks its budget after each step: it starts another while any time is left.
        more = math.ceil(left / pace) if pace > 0 else self.total
        self.steps.set_total(min(self.total, done + more))

    def __exit__(self, *exc: object) -> None:
        self.steps.__exit__(*exc)
