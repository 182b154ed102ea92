"""The parity bench's results: merging the seeds of separate invocations into one entry per
scenario (:func:`merge_entry`) and drawing them (:func:`plot_curves`), one panel per scenario.

A scenario's entry (``--json``) holds its ``centralized`` and ``coded`` curves by seed, each a list
of evaluation points (``env_steps``, ``return``, ``return/<group>``, ``random_vs_trained/<group>``),
and the references they are read against (``random``, ``random_groups``, ``scripted``).
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from marlplug.plotting import saved_figure


def merge_entry(merged: dict[str, Any], scenario: str, entry: dict[str, Any]) -> None:
    """Add ``entry`` (one scenario of a ``--json`` output) to ``merged``: a scenario already there
    gains the entry's seeds (so seeds trained in separate invocations share a panel) and its
    ``max_abs_difference`` and ``final_median`` are recomputed over all of them.

    Examples:
        >>> merged = {}
        >>> merge_entry(merged, "s", {"centralized": {"0": [{"return": -3.0}]}, "coded": {}})
        >>> merge_entry(merged, "s", {"centralized": {"1": [{"return": -1.0}]},
        ...     "coded": {"1": [{"return": -1.0}]}})
        >>> sorted(merged["s"]["centralized"]), merged["s"]["final_median"]
        (['0', '1'], -2.0)
    """
    if scenario not in merged:
        merged[scenario] = {**entry, "centralized": {}, "coded": {}}
    target = merged[scenario]
    target["centralized"].update(entry["centralized"])
    target["coded"].update(entry["coded"])
    gaps = [
        abs(a["return"] - b["return"])
        for seed, coded_curve in target["coded"].items()
        for a, b in zip(coded_curve, target["centralized"][seed], strict=True)
    ]
    target["max_abs_difference"] = max(gaps, default=0.0)
    finals = [curve[-1]["return"] for curve in target["centralized"].values()]
    target["final_median"] = statistics.median(finals)


def group_names(entry: dict[str, Any]) -> list[str]:
    """The agent groups whose returns the entry's curves carry (``return/<group>``)."""
    first = next(iter(entry["centralized"].values()))[0]
    groups = [key.split("/", 1)[1] for key in first if key.startswith("return/")]
    return sorted(groups, key=lambda group: (group != "agent", group))  # "agent" keeps one colour


def random_vs_trained(entry: dict[str, Any], group: str) -> tuple[list[float], list[float]] | None:
    """The env steps and, at each, the median over the centralized seeds of ``group``'s return
    acting at random against the others' trained agents; ``None`` when the curves do not carry it
    (one group, or results written before it was measured).

    Example:
        >>> curve = lambda *values: [{"env_steps": 8 * i, "random_vs_trained/prey": v}
        ...     for i, v in enumerate(values)]
        >>> random_vs_trained({"centralized": {"0": curve(-9.0, -7.0), "1": curve(-5.0, -3.0),
        ...     "2": curve(-6.0, -1.0)}}, "prey")
        ([0, 8], [-6.0, -3.0])
    """
    key = f"random_vs_trained/{group}"
    curves = [curve for curve in entry["centralized"].values() if key in curve[0]]
    if not curves:
        return None
    steps = [point["env_steps"] for point in curves[0]]
    medians = [
        statistics.median(values)
        for values in zip(*([p[key] for p in c] for c in curves), strict=True)
    ]
    return steps, medians


def plot_curves(results: dict[str, Any], path: Path) -> Path:
    """One panel per scenario: every centralized seed solid, the coded run(s) dashed, the random
    policy dotted. A scenario with one group plots the team's return; one with several (predators
    and prey, ...) plots each group's return in its own colour, since their sum hides who learns,
    and, dash-dotted, what the group gets acting at random against the others' trained agents."""
    scenarios = list(results)
    columns = min(2, len(scenarios))
    rows = math.ceil(len(scenarios) / columns)
    with saved_figure(
        path, figsize=(5.5 * columns, 3.6 * rows), nrows=rows, ncols=columns, squeeze=False
    ) as (_, grid):
        for axes, scenario in zip(grid.flat, scenarios, strict=False):
            entry = results[scenario]
            groups = group_names(entry)
            series = [(f"return/{g}", g) for g in groups] if len(groups) > 1 else [("return", "")]
            randoms = entry.get("random_groups", {})
            for colour, (key, group) in enumerate(series):
                colour_name = f"C{colour}" if group else None
                for kind, style in (("centralized", "-"), ("coded", "--")):
                    for index, (seed, curve) in enumerate(entry[kind].items()):
                        label = (
                            f"{kind} seed {seed}" if kind == "centralized" else entry["coded_label"]
                        )
                        if group and index > 0:
                            label = "_nolegend_"  # a group's seeds share its colour: one entry
                        elif group and kind == "centralized":
                            label = f"{kind}, seed {', '.join(map(str, entry[kind]))}"
                        axes.plot(
                            [p["env_steps"] for p in curve],
                            [p[key] for p in curve],
                            style,
                            color=colour_name,
                            marker="o" if kind == "centralized" else "x",
                            markersize=3,
                            label=f"{group}: {label}" if group and index == 0 else label,
                        )
                if not group and entry.get("scripted") is not None:
                    axes.axhline(
                        entry["scripted"], color="black", linestyle="-.", label="scripted oracle"
                    )
                floor = randoms.get(group) if group else entry["random"]
                if floor is not None:
                    axes.axhline(
                        floor,
                        color=colour_name or "grey",
                        linestyle=":",
                        label=f"{group}: random policy" if group else "random policy",
                    )
                against = random_vs_trained(entry, group) if group else None
                if against is not None:
                    axes.plot(
                        *against,
                        "-.",
                        color=colour_name,
                        linewidth=1,
                        label=f"{group}: random, against the others trained (seed median)",
                    )
            trained_on = entry.get("env_backend", "mpe")
            axes.set_title(
                f"{scenario.replace('_', ' ')}, M = {entry['agents']} "
                f"(trained on {trained_on}, evaluated on mpe)",
                fontsize=9,
            )
            axes.set_xlabel("env steps")
            axes.set_ylabel(
                "greedy evaluation return (per group)"
                if len(series) > 1
                else "greedy evaluation return (team)"
            )
            axes.legend(fontsize=6)
        for axes in list(grid.flat)[len(scenarios) :]:
            axes.axis("off")
    return path
