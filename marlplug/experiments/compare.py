"""``marlplug compare``'s work: gather the runs of one or more results files by configuration, state
each configuration's IQM, mean and median with 95% intervals and each one's probability of
improving on a baseline, and draw the final scores, the sample-efficiency curves and the
performance profiles in one figure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from marlplug.errors import UserError
from marlplug.experiments.results import RunResult, SweepResults
from marlplug.experiments.statistics import (
    Aggregates,
    Estimate,
    aggregate,
    iqm_curves,
    performance_profiles,
    probability_of_improvement,
)

Metric = Literal["score", "return"]

#: Thresholds at which a performance profile is drawn.
PROFILE_POINTS = 101


@dataclass(frozen=True)
class Group:
    """The runs of one configuration, named as the report shows it."""

    label: str
    runs: list[RunResult]
    machines: list[str]

    def finals(self, metric: Metric) -> np.ndarray:
        """``[runs, 1]``: every run's final value."""
        values = [run.value(metric) for run in self.runs]
        if any(value is None for value in values):
            raise UserError(
                f"compare: '{self.label}' has runs without an oracle-normalized score (its "
                f"scenario has no scripted policy); use --metric return"
            )
        return np.array(values, dtype=float)[:, None]

    def curves(self, metric: Metric) -> tuple[np.ndarray, np.ndarray] | None:
        """``(frames [points], values [runs, 1, points])`` over the evaluation points every run has
        (``None`` when a run has no periodic evaluation)."""
        length = min(len(run.curve) for run in self.runs)
        if length == 0:
            return None
        frames = np.array([point.frames for point in self.runs[0].curve[:length]], dtype=float)
        values = [
            [point.mean if metric == "return" else point.score for point in run.curve[:length]]
            for run in self.runs
        ]
        if any(value is None for row in values for value in row):
            return None
        return frames, np.array(values, dtype=float)[:, None, :]


def gather(sources: Sequence[tuple[Path, SweepResults]]) -> list[Group]:
    """One group per configuration, in the order the files list them. A group is labelled by its
    configuration's name; where two files use the same name, by ``<sweep name>: <name>``, and
    where that is not enough either, by ``<file>: <name>``.

    Raises:
        UserError: a file has no finished run, or one file is given twice.
    """
    found: list[tuple[Path, SweepResults, str]] = []
    for path, results in sources:
        if not results.runs:
            raise UserError(f"compare: {path} holds no finished run yet")
        named = [*results.configurations, *(run.configuration for run in results.runs)]
        found += [
            (path, results, name)
            for name in dict.fromkeys(named)
            if any(run.configuration == name for run in results.runs)
        ]
    ways = (
        lambda path, results, name: name,
        lambda path, results, name: name if name == results.name else f"{results.name}: {name}",
        lambda path, results, name: f"{path}: {name}",
    )
    for way in ways:
        labels = [way(*entry) for entry in found]
        if len(set(labels)) == len(labels):
            break
    else:
        raise UserError("compare: a results file is given twice")
    return [
        Group(
            label,
            sorted((r for r in results.runs if r.configuration == name), key=lambda r: r.seed),
            list(
                dict.fromkeys(
                    r.cpu or results.machine.cpu for r in results.runs if r.configuration == name
                )
            ),
        )
        for label, (_, results, name) in zip(labels, found, strict=True)
    ]


@dataclass
class Comparison:
    """What ``marlplug compare`` reports (``--json`` prints it as it is)."""

    metric: Metric
    baseline: str
    aggregates: dict[str, Aggregates]
    improvement: dict[str, Estimate]
    """P(configuration > baseline), for every configuration but the baseline."""
    machines: dict[str, list[str]]
    seeds: dict[str, list[int]]
    reps: int
    figure: str | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        """The report for people: a table, then the probabilities of improvement."""
        width = max(len(label) for label in self.aggregates)
        header = (
            f"{'configuration':<{width}}  runs  {'IQM [95% CI]':<24}  {'mean [95% CI]':<24}  "
            f"median [95% CI]"
        )
        lines = [
            f"final {self.metric} per configuration (stratified bootstrap, {self.reps} resamples):",
            header,
        ]
        digits = 3 if self.metric == "score" else 2
        for label, stats in self.aggregates.items():
            lines.append(
                f"{label:<{width}}  {stats.runs:>4}  {stats.iqm.describe(digits):<24}  "
                f"{stats.mean.describe(digits):<24}  {stats.median.describe(digits)}"
            )
        if self.improvement:
            lines.append(f"probability of improvement over '{self.baseline}', P(X > Y):")
            lines += [
                f"  {label:<{width}}  {estimate.describe()}"
                for label, estimate in self.improvement.items()
            ]
        machines = sorted({cpu for cpus in self.machines.values() for cpu in cpus})
        lines.append(f"machine{'s' if len(machines) > 1 else ''}: {'; '.join(machines)}")
        lines += [f"note: {note}" for note in self.notes]
        if self.figure is not None:
            lines.append(f"figure: {self.figure}")
        return lines


def compare(
    groups: Sequence[Group],
    *,
    metric: Metric,
    baseline: str | None = None,
    reps: int = 2000,
    seed: int = 0,
    figure: Path | None = None,
) -> Comparison:
    """Aggregate every group's final ``metric`` and compare each with ``baseline`` (default: the
    first group); draw ``figure`` when given.

    Raises:
        UserError: ``baseline`` names no group.
    """
    labels = [group.label for group in groups]
    baseline = labels[0] if baseline is None else baseline
    if baseline not in labels:
        raise UserError(
            f"--baseline: no configuration '{baseline}'; the configurations: {', '.join(labels)}"
        )
    finals = {group.label: group.finals(metric) for group in groups}
    improvement = {
        label: probability_of_improvement(finals[label], finals[baseline], reps=reps, seed=seed)
        for label in labels
        if label != baseline
    }
    notes = []
    if any(len(group.runs) < 5 for group in groups):
        notes.append("fewer than 5 runs in a configuration: its intervals are wide and rough")
    if len({cpu for group in groups for cpu in group.machines}) > 1:
        notes.append("the runs come from different CPU models: the same seed differs across them")
    comparison = Comparison(
        metric=metric,
        baseline=baseline,
        aggregates=aggregate(finals, reps=reps, seed=seed),
        improvement=improvement,
        machines={group.label: group.machines for group in groups},
        seeds={group.label: [run.seed for run in group.runs] for group in groups},
        reps=reps,
        notes=notes,
    )
    if figure is not None:
        draw(groups, comparison, finals, figure, seed=seed)
        comparison.figure = str(figure)
    return comparison


def draw(
    groups: Sequence[Group],
    comparison: Comparison,
    finals: dict[str, np.ndarray],
    path: Path,
    *,
    seed: int,
) -> None:
    """Three panels: final IQM/mean/median with intervals; IQM over frames with its band; the
    performance profile (fraction of runs above each value) with its band."""
    from matplotlib.ticker import EngFormatter

    from marlplug.plotting import saved_figure

    metric, reps = comparison.metric, comparison.reps
    label = "oracle-normalized score" if metric == "score" else "team return"
    colors = [f"C{i % 10}" for i in range(len(groups))]
    curves = {g.label: c for g in groups if (c := g.curves(metric)) is not None}
    with saved_figure(path, figsize=(16, 4.8), ncols=3) as (_, (bars, efficiency, profile)):
        for row, (name, color) in enumerate(zip(comparison.aggregates, colors, strict=True)):
            stats = comparison.aggregates[name]
            for offset, (which, estimate) in enumerate(
                (("IQM", stats.iqm), ("mean", stats.mean), ("median", stats.median))
            ):
                y = row + (offset - 1) * 0.25
                bars.plot(
                    [estimate.low, estimate.high],
                    [y, y],
                    color=color,
                    linewidth=6 - 2 * offset,
                    alpha=0.8,
                )
                bars.plot([estimate.point], [y], marker="|", color="black", markersize=12)
                if row == 0:
                    bars.annotate(
                        which,
                        (estimate.high, y),
                        xytext=(4, -3),
                        textcoords="offset points",
                        fontsize=7,
                    )
        bars.set_yticks(range(len(comparison.aggregates)), list(comparison.aggregates))
        bars.invert_yaxis()
        bars.set_xlabel(f"final {label} (95% CI; thick to thin: IQM, mean, median)")
        bars.grid(axis="x", alpha=0.3)
        if curves:
            estimates = iqm_curves(
                {name: values for name, (_, values) in curves.items()}, reps=reps, seed=seed
            )
            for group, color in zip(groups, colors, strict=True):
                if group.label not in curves:
                    continue
                frames = curves[group.label][0]
                point, band = estimates[group.label]
                efficiency.plot(frames, point, color=color, label=group.label)
                efficiency.fill_between(frames, band[0], band[1], color=color, alpha=0.2)
            efficiency.legend(fontsize=8)
        else:
            efficiency.text(
                0.5,
                0.5,
                "no periodic evaluations\n(train.eval_every)",
                ha="center",
                transform=efficiency.transAxes,
            )
        efficiency.set_xlabel("frames")
        efficiency.xaxis.set_major_formatter(EngFormatter())  # 500k, 2.4M: labels that fit
        efficiency.set_ylabel(f"IQM {label} (deterministic evaluation)")
        efficiency.grid(alpha=0.3)
        everything = np.concatenate([values.ravel() for values in finals.values()])
        spread = max(float(np.ptp(everything)), 1e-6)
        thresholds = np.linspace(
            everything.min() - 0.05 * spread, everything.max() + 0.05 * spread, PROFILE_POINTS
        )
        profiles = performance_profiles(finals, thresholds, reps=reps, seed=seed)
        for group, color in zip(groups, colors, strict=True):
            point, band = profiles[group.label]
            profile.plot(thresholds, point, color=color, label=group.label)
            profile.fill_between(thresholds, band[0], band[1], color=color, alpha=0.2)
        profile.set_xlabel(f"final {label} τ")
        profile.set_ylabel("fraction of runs with value > τ")
        profile.grid(alpha=0.3)
        profile.legend(fontsize=8)
