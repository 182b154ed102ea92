"""The figure of ``marlplug codes analyze --plot``: recovery probability and round time versus stragglers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from marlplug.coding.analysis import AnalysisSettings, CodeReport
from marlplug.plotting import saved_figure


def plot_analysis(
    reports: Sequence[CodeReport], settings: AnalysisSettings, path: str | Path
) -> Path:
    """Save a two-panel PNG: P(decodable) and expected round time, each versus k stragglers."""
    with saved_figure(path, figsize=(11, 4.2), nrows=1, ncols=2) as (figure, axes):
        recovery_axis, time_axis = axes
        for report in reports:
            ks = sorted(report.recovery)
            recovery_axis.plot(ks, [report.recovery[k] for k in ks], marker="o", label=report.name)
            times = [report.round_s_by_stragglers[k] for k in ks]
            if any(math.isfinite(t) for t in times):
                time_axis.plot(ks, times, marker="o", label=report.name)
        recovery_axis.set(
            xlabel="stragglers k (never answer)", ylabel="P(decodable)", ylim=(-0.03, 1.03)
        )
        time_axis.set(
            xlabel=f"stragglers k (answer {settings.straggler_delay_s:g} s late)",
            ylabel="expected round time (s)",
        )
        for axis in (recovery_axis, time_axis):
            axis.grid(alpha=0.3)
        recovery_axis.legend(fontsize="small")
        figure.suptitle(
            f"M={settings.num_agents} agents, N={settings.num_learners} learners, "
            f"{settings.compute_s:g} s compute per agent"
        )
    return Path(path)
