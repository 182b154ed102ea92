"""How a run went: the totals every run result carries, the learning curve (training return and
periodic deterministic evaluations) and the end-of-run summary that ``marlplug train`` prints (the
same for every algorithm, coded or not; one point is one update, as ``train.updates`` counts them)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from marlplug.plotting import saved_figure
from marlplug.runs.evaluations import EvaluationPoint
from marlplug.runs.stats import RETURN_PER_AGENT, RETURN_TEAM, ReturnPoint

#: Updates in the trailing mean drawn over the learning curve (single updates are noisy).
SMOOTHING_WINDOW = 5


class RunTotals:
    """What every run result reports beyond its files.

    Mixed into the orchestrator's run result (:class:`marlplug.train.result.TrainResult`, a
    dataclass that declares these fields).

    Attributes:
        history: the return of every update in which an episode finished, over the
            whole run (a resumed run's earlier ones included).
        frames: environment frames taken in this call (a resumed run: since the resume).
        seconds: wall time of this call's training loop.
        total_frames: environment frames of the whole run, across resumes.
        completed: updates done in the whole run.
        notes: what the user should know about the run, e.g. that learning has not started yet.
        evaluations: the periodic deterministic evaluations (``train.eval_every``), over the whole
            run.
    """

    history: list[ReturnPoint]
    evaluations: list[EvaluationPoint]
    frames: int
    seconds: float
    total_frames: int
    completed: int
    notes: list[str]

    @property
    def fps(self) -> float:
        """Frames per second of this call (0 when it took no frames)."""
        return self.frames / self.seconds if self.seconds > 0 else 0.0

    @property
    def final_return(self) -> float | None:
        """The last return per agent of the run, if an episode finished."""
        return self.history[-1].per_agent if self.history else None

    @property
    def final_evaluation(self) -> EvaluationPoint | None:
        """The run's last deterministic evaluation, if it ran one."""
        return self.evaluations[-1] if self.evaluations else None


def plot_learning_curve(
    history: Sequence[ReturnPoint],
    path: Path,
    *,
    title: str,
    num_agents: int,
    evaluations: Sequence[EvaluationPoint] = (),
) -> Path:
    """Save the return against environment frames as a PNG, with a trailing mean over updates.

    The left axis is the return per agent, the right one the team's return (summed over the
    ``num_agents`` agents): one curve, read on either scale. One point is one update
    (``train.updates`` counts them), whatever the algorithm calls it. ``evaluations`` (periodic
    deterministic evaluations) are drawn on the same scales, with their std over episodes as bars.

    Examples:
        >>> import tempfile
        >>> point = EvaluationPoint(update=1, frames=10, mean=-6.0, std=1.0, episodes=2)
        >>> path = Path(tempfile.mkdtemp()) / "curve.png"
        >>> plot_learning_curve([ReturnPoint(10, -3.0, -9.0)], path, title="t", num_agents=3,
        ...                     evaluations=[point]).is_file()
        True
    """
    import numpy as np

    with saved_figure(path, figsize=(6.5, 4), dpi=100) as (_, axes):
        if history:
            frames = [point.frames for point in history]
            returns = [point.per_agent for point in history]
            axes.plot(frames, returns, marker="o", markersize=3, alpha=0.5, label="per update")
            if len(returns) >= 2 * SMOOTHING_WINDOW:
                window = np.ones(SMOOTHING_WINDOW) / SMOOTHING_WINDOW
                smoothed = np.convolve(returns, window, mode="valid")
                axes.plot(
                    frames[SMOOTHING_WINDOW - 1 :],
                    smoothed,
                    linewidth=2,
                    label=f"mean of last {SMOOTHING_WINDOW}",
                )
        if evaluations:
            episodes = evaluations[-1].episodes
            axes.errorbar(
                [point.frames for point in evaluations],
                [point.mean / num_agents for point in evaluations],
                yerr=[point.std / num_agents for point in evaluations],
                marker="s",
                markersize=4,
                capsize=3,
                color="black",
                label=f"evaluation ({episodes} deterministic episodes, ± std)",
            )
        if history or evaluations:
            axes.legend(loc="best")
        team_axis = axes.secondary_yaxis(
            "right", functions=(lambda y: y * num_agents, lambda y: y / num_agents)
        )
        team_axis.set_ylabel(f"{RETURN_TEAM} (sum over {num_agents} agents)")
        axes.set_xlabel("environment frames")
        axes.set_ylabel(f"{RETURN_PER_AGENT} (episode mean)")
        axes.set_title(title)
        axes.grid(True, alpha=0.3)
    return path


def _return_line(values: Sequence[float]) -> str:
    """``first -> last``, plus the mean of the first vs the last few when there are enough."""
    text = f"{values[0]:.3f} -> {values[-1]:.3f}"
    window = min(SMOOTHING_WINDOW, len(values) // 2)
    if window > 0:
        start, end = sum(values[:window]) / window, sum(values[-window:]) / window
        text += f" (first {window} vs last {window} updates: {start:.3f} -> {end:.3f}, {end - start:+.3f})"
    return text


def _frames_line(totals: RunTotals) -> str:
    if totals.frames == totals.total_frames:
        return f"{totals.total_frames} ({totals.fps:.0f} frames/s)"
    if totals.frames == 0:
        return (
            f"{totals.total_frames} (none in this session: the run had already ended after "
            f"{totals.completed} updates; raise train.updates or train.max_minutes to go on)"
        )
    return f"{totals.total_frames} ({totals.frames} in this session, {totals.fps:.0f} frames/s)"


def summary_lines(
    totals: RunTotals,
    *,
    run_dir: Path,
    metrics: str,
    outputs: Sequence[tuple[str, Path]],
) -> list[str]:
    """The end-of-run summary every ``marlplug train`` run prints: how the return moved (per agent
    and for the team), the final deterministic evaluation (``train.eval_every``), the frames, where everything went, what to know, and how to resume.

    Args:
        totals: the run's result.
        run_dir: the run folder.
        metrics: where the metrics went, e.g. ``"runs/x/metrics (csv)"``.
        outputs: further ``(label, path)`` lines (checkpoint, learning curve, ...), in order.

    One step of ``history`` is an update, for every algorithm (``train.updates`` counts them; an
    algorithm's iteration is one update).

    Examples:
        >>> from dataclasses import dataclass, field
        >>> @dataclass
        ... class Done(RunTotals):
        ...     history: list[ReturnPoint]
        ...     evaluations: list[EvaluationPoint] = field(default_factory=list)
        ...     frames: int = 20
        ...     seconds: float = 4.0
        ...     total_frames: int = 20
        ...     completed: int = 2
        ...     notes: list[str] = field(default_factory=list)
        >>> done = Done([ReturnPoint(10, -1.0, -3.0), ReturnPoint(20, -0.5, -1.5)])
        >>> lines = summary_lines(done, run_dir=Path("runs/a"), metrics="runs/a/metrics (csv)",
        ...     outputs=[])
        >>> print("\\n".join(lines[:3]))
        return per agent: -1.000 -> -0.500 (first 1 vs last 1 updates: -1.000 -> -0.500, +0.500)
        return, team:     -3.000 -> -1.500 (first 1 vs last 1 updates: -3.000 -> -1.500, +1.500)
        frames:           20 (5 frames/s)
        >>> summary_lines(Done([]), run_dir=Path("runs/a"), metrics="", outputs=[])[0]
        'return per agent: - (no episode ended during training)'
    """
    history = totals.history
    # A return is counted when an episode ends inside a rollout; a short run may see none.
    none = "- (no episode ended during training)"
    labelled: list[tuple[str, object]] = [
        (
            "return per agent",
            _return_line([p.per_agent for p in history]) if history else none,
        ),
        ("return, team", _return_line([p.team for p in history]) if history else none),
        ("frames", _frames_line(totals)),
        *(
            [("evaluation, team", totals.final_evaluation.describe())]
            if totals.final_evaluation is not None
            else []
        ),
        ("run folder", run_dir),
        ("metrics", metrics),
        *outputs,
        *(("note", note) for note in totals.notes),
        ("resume with", f"marlplug train --resume {run_dir}"),
    ]
    width = max(len(label) for label, _ in labelled) + 2
    return [f"{label + ':':<{width}}{value}" for label, value in labelled]
