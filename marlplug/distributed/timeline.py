"""The round timeline: which learners answered when, and when decoding finished, round after round."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from marlplug.distributed.controller import RoundLog, RoundTimeoutError
from marlplug.plotting import saved_figure


def plot_timeline(rounds: Sequence[RoundLog], path: str | Path, *, num_learners: int) -> Path:
    """Draw ``rounds`` back to back on one time axis and save a PNG.

    Each learner is a row; a dot is an answer (filled: used for decoding, hollow: arrived but not
    needed), a cross marks a straggler's late slot, and a vertical line marks the end of decoding.
    """
    with saved_figure(path, figsize=(10, 0.3 * num_learners + 2)) as (_, axes):
        offset = 0.0
        for log in rounds:
            for task_id, arrival in log.arrivals.items():
                learner = task_id if task_id < num_learners else -1
                used = task_id in log.learners_used
                axes.scatter(
                    offset + arrival,
                    learner,
                    s=18,
                    facecolors="tab:blue" if used else "none",
                    edgecolors="tab:blue",
                )
            for learner in log.stragglers:
                axes.scatter(offset + log.wait_s, learner, marker="x", color="tab:red", s=14)
            axes.axvline(offset + log.round_s, color="tab:green", linewidth=0.8)
            offset += log.round_s
        axes.set_xlabel(f"time (s, {rounds[0].clock if rounds else 'wall'} clock)")
        axes.set_ylabel("learner (-1: re-dispatched task)")
        axes.set_title("coded rounds: answers (filled = used), stragglers (x), decode done (line)")
    return Path(path)


def timeline_of_failed_run(
    error: RoundTimeoutError, rounds: Sequence[RoundLog], path: str | Path, *, num_learners: int
) -> RoundTimeoutError:
    """Draw the last rounds up to and including the one that failed, and return ``error`` with the
    timeline's path added to its one line (what ``marlplug train`` prints when a run stops)."""
    logs = [*rounds, error.round_log] if error.round_log is not None else list(rounds)
    if logs:
        plot_timeline(logs, path, num_learners=num_learners)
        return RoundTimeoutError(f"{error}; timeline: {path}", error.round_log)
    return error
