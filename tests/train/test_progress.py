"""The progress bars of ``marlplug.runs.reporting``: training's ``ProgressBar`` and the benchmarks'
``stderr_progress``, both built on ``StepProgress``."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from marlplug.runs.reporting import ProgressBar, StepProgress, stderr_progress
from marlplug.runs.stats import ReturnPoint


def terminal() -> tuple[Console, io.StringIO]:
    """A console that rich treats as a terminal, drawing plain text into a string."""
    screen = io.StringIO()
    return Console(file=screen, force_terminal=True, width=100, color_system=None), screen


def counts(screen: io.StringIO) -> list[str]:
    """The ``done/total`` of every frame drawn so far."""
    return re.findall(r"(\d+/\d+)", screen.getvalue())


def test_hidden_bar_draws_nothing_but_counts() -> None:
    console, screen = terminal()
    with StepProgress(False, 3, label="bench", console=console, redraw_every_s=0) as progress:
        progress.advance("a")
        progress.advance(steps=2)
    assert screen.getvalue() == ""
    assert progress.done == 3


def test_redraws_are_spaced_out_but_the_last_step_and_a_new_phase_always_show() -> None:
    console, screen = terminal()
    with StepProgress(True, 5, label="bench", console=console, redraw_every_s=3600) as progress:
        for _ in range(3):
            progress.advance()
        assert counts(screen) == ["0/5"]  # only the first frame: the 3 steps came too soon
        progress.advance("phase two", steps=0)
        assert counts(screen)[-1] == "3/5" and "phase two" in screen.getvalue()
        progress.advance()
        assert counts(screen)[-1] == "3/5"
        progress.advance()
        assert counts(screen)[-1] == "5/5"


def test_bench_bar_stays_off_when_stderr_is_not_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # FORCE_COLOR alone makes rich treat any file as a terminal (CI setups set it for colours);
    # a pipe or file must still get no bar, not even rich's final frame or blank line.
    monkeypatch.setenv("FORCE_COLOR", "1")
    with stderr_progress(2, label="bench demo") as progress:
        progress.advance("one")
        progress.advance("two")
    assert not progress.show
    assert capsys.readouterr() == ("", "")


def test_training_bar_keeps_the_last_return(capsys: pytest.CaptureFixture[str]) -> None:
    # Training's bar as before: on stdout, and rich prints its last frame to a non-terminal.
    with ProgressBar(True, total=3, completed=1) as advance:
        advance(ReturnPoint(frames=10, per_agent=-1.5, team=-3.0))
        advance(None)
    out = capsys.readouterr().out
    assert "train" in out and "3/3" in out and "return per agent: -1.500 (team -3.000)" in out


def test_a_resumed_run_past_its_total_shows_its_own_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with ProgressBar(True, total=2, completed=3):
        pass
    out = capsys.readouterr().out
    assert "3/3" in out and "3/2" not in out


def test_a_time_budget_sets_where_the_bar_ends(capsys: pytest.CaptureFixture[str]) -> None:
    # train.updates=1000000 with train.max_minutes: the bar counts to where the budget stops the
    # run, estimated at this session's pace (10 s a step here), not to a million.
    ticks, left = iter([0.0, 10.0, 20.0]), iter([600.0, 15.0, 0.0])
    bar = ProgressBar(
        True, total=10**6, completed=0, seconds_left=lambda: next(left), clock=lambda: next(ticks)
    )
    with bar as advance:
        assert bar.steps.total is None  # no pace before the first step: shown as 0/?
        advance(None)
        assert bar.steps.total == 3  # 1 done, 15 s left: 2 more steps start before it runs out
        advance(None)
        assert bar.steps.total == 2  # the budget is spent: the run ends with this step
    out = capsys.readouterr().out
    assert "2/2" in out and "1000000" not in out


def test_without_a_budget_the_total_stays() -> None:
    bar = ProgressBar(False, total=4, completed=0, seconds_left=lambda: None)
    with bar as advance:
        advance(None)
    assert bar.steps.total == 4
