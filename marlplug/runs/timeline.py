"""The round timeline: which learners answered when, and when decoding finished, round after round."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from marlplug.distributed.controller import RoundLog, RoundTimeoutError
from marlplug.plotting import saved_figure

#: The row of answers to re-dispatched tasks (a task id beyond the learners).
REDISPATCHED_ROW = -1


def plot_timeline(rounds: Sequence[RoundLog], path: str | Path, *, num_learners: int) -> Path:
    """Draw ``rounds`` back to back on one time axis (:func:`draw_timeline`) and save a PNG.

    Examples:
        >>> import tempfile
        >>> log = RoundLog(round_index=0, clock="simulated", stragglers=[2], learners_used=[0, 1],
        ...     arrivals={0: 0.1, 1: 0.2, 2: 0.5}, compute_s={}, wait_s=0.2, decode_s=0.01,
        ...     round_s=0.21)
        >>> plot_timeline([log], Path(tempfile.mkdtemp()) / "timeline.png", num_learners=3).is_file()
        True
    """
    with saved_figure(path, figsize=(10, 0.3 * num_learners + 2)) as (_, axes):
        draw_timeline(axes, rounds, num_learners=num_learners)
    return Path(path)


def draw_timeline(axes: Any, rounds: Sequence[RoundLog], *, num_learners: int) -> None:
    """Draw ``rounds`` back to back on matplotlib ``axes``.

    Each learner is a row (integer ticks, one per learner; a row ``-1`` holds answers to
    re-dispatched tasks when there are any); a dot is an answer (filled: used for decoding, hollow:
    arrived but not needed), a cross marks a straggler's late slot, and a vertical line marks the
    end of decoding. A legend beside the plot says so.
    """
    from matplotlib.lines import Line2D

    redispatched = any(task >= num_learners for log in rounds for task in log.arrivals)
    offset = 0.0
    for log in rounds:
        for task_id, arrival in log.arrivals.items():
            learner = task_id if task_id < num_learners else REDISPATCHED_ROW
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
    rows = [*([REDISPATCHED_ROW] if redispatched else []), *range(num_learners)]
    axes.set_yticks(rows, [str(row) for row in rows])
    axes.set_ylim(rows[0] - 0.7, rows[-1] + 0.7)
    axes.set_xlabel(f"time (s, {rounds[0].clock if rounds else 'wall'} clock)")
    axes.set_ylabel("learner" + (" (-1: re-dispatched task)" if redispatched else ""))
    axes.set_title(f"coded rounds: the last {len(rounds)}, back to back")
    legend = [
        Line2D([], [], marker="o", linestyle="", color="tab:blue", label="answer, used"),
        Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            markerfacecolor="none",
            markeredgecolor="tab:blue",
            label="answer, not needed",
        ),
        Line2D([], [], marker="x", linestyle="", color="tab:red", label="straggler (delayed)"),
        Line2D([], [], color="tab:green", linewidth=0.8, label="round decoded"),
    ]
    # Beside the plot: it covers no answer, whatever the number of learners.
    axes.legend(handles=legend, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)


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
