"""The paper's training-time numbers, and ``marlplug bench coding``'s rows set beside them.

The authors' per-round times (their figure, read by eye, ±0.2) ship with marlplug as package data,
``marlplug/bench/data/paper_training_time.csv``: :func:`read_reference` reads them from the
installed package, wherever the command runs. :func:`shape_summary`, :func:`check_targets`,
:func:`markdown_table` and :func:`plot_bars` compare a run's rows with them.
"""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from marlplug.plotting import saved_figure

#: The paper's five codes, in the order its figures show them.
CODES = ("uncoded", "mds", "random_sparse", "replication", "ldpc")

#: The reference table inside the installed package.
REFERENCE_FILE = "paper_training_time.csv"


def read_reference(path: Path | None = None) -> list[dict[str, Any]]:
    """The authors' numbers (scenario, agents, learners, stragglers, code, time_s): from ``path``,
    or the table shipped with marlplug.

    Examples:
        >>> rows = read_reference()
        >>> len(rows), sorted(rows[0])
        (120, ['agents', 'code', 'learners', 'scenario', 'stragglers', 'time_s'])
    """
    source = path if path is not None else resources.files(__package__) / "data" / REFERENCE_FILE
    with source.open() as handle:
        return [
            {
                **row,
                "agents": int(row["agents"]),
                "stragglers": int(row["stragglers"]),
                "time_s": float(row["time_s"]),
            }
            for row in csv.DictReader(handle)
        ]


def shape_summary(
    rows: list[dict[str, Any]], reference: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Per (scenario, M, k): the fastest code and ``mds / uncoded(k=0)``, ours beside the paper's."""

    def index(items: list[dict[str, Any]], key: str) -> dict[tuple[str, int, int, str], float]:
        return {(r["scenario"], r["agents"], r["stragglers"], r["code"]): r[key] for r in items}

    ours, theirs = index(rows, "round_s"), index(reference, "time_s")
    summary = []
    for scenario, agents, k in sorted({key[:3] for key in ours}):
        entry: dict[str, Any] = {"scenario": scenario, "agents": agents, "stragglers": k}
        for label, table in (("ours", ours), ("paper", theirs)):
            times = {
                c: v for (s, m, kk, c), v in table.items() if (s, m, kk) == (scenario, agents, k)
            }
            base = table.get((scenario, agents, 0, "uncoded"))
            if times and base:
                entry[f"{label}_fastest"] = min(times, key=lambda c: times[c])
                if "mds" in times:
                    entry[f"{label}_mds_over_uncoded_k0"] = times["mds"] / base
                if "uncoded" in times:
                    entry[f"{label}_uncoded_over_uncoded_k0"] = times["uncoded"] / base
        summary.append(entry)
    return summary


def check_targets(rows: list[dict[str, Any]], learners: int) -> list[str]:
    """The issue's targets on the simulated clock, one line each, ``ok`` or ``MISSED``."""
    lines = []
    table = {(r["scenario"], r["agents"], r["stragglers"], r["code"]): r for r in rows}
    for (scenario, agents, k, code), row in sorted(table.items()):
        if code != "mds":
            continue
        base = table.get((scenario, agents, 0, "uncoded"))
        uncoded = table.get((scenario, agents, k, "uncoded"))
        if base is None or uncoded is None:
            continue
        ratio = row["round_s"] / base["round_s"]
        update_ratio = row["update_s"] / base["update_s"]
        note = f"; learner round alone: {update_ratio:.2f}x"
        if k == 0:
            verdict = "ok" if ratio <= 1.3 else "MISSED"
            lines.append(
                f"{verdict}: {scenario} M={agents} k=0: mds/uncoded = {ratio:.2f} (target <= 1.3){note}"
            )
        elif 1 <= k <= learners - agents:
            waited = uncoded["update_s"]
            verdict = "ok" if ratio <= 1.2 and waited >= row["delay_s"] else "MISSED"
            lines.append(
                f"{verdict}: {scenario} M={agents} k={k}: mds/uncoded(k=0) = {ratio:.2f} (target <= 1.2), "
                f"uncoded waits {waited:.2f} s (target >= t_s = {row['delay_s']:g} s){note}"
            )
    return lines


def plot_bars(rows: list[dict[str, Any]], reference: list[dict[str, Any]], path: Path) -> Path:
    """Grouped bars (ours, relative to uncoded at k=0) with the paper's ratios as black dots."""
    groups = sorted({(r["scenario"], r["agents"]) for r in rows})
    columns = min(4, len(groups))
    lines = (len(groups) + columns - 1) // columns
    with saved_figure(
        path, figsize=(4 * columns, 3.2 * lines), nrows=lines, ncols=columns, squeeze=False
    ) as (_, axes_grid):
        codes = [c for c in CODES if any(r["code"] == c for r in rows)]
        width = 0.8 / max(1, len(codes))
        for axes, (scenario, agents) in zip(axes_grid.flat, groups, strict=False):
            mine = {
                (r["stragglers"], r["code"]): r["round_s"]
                for r in rows
                if (r["scenario"], r["agents"]) == (scenario, agents)
            }
            paper = {
                (r["stragglers"], r["code"]): r["time_s"]
                for r in reference
                if (r["scenario"], r["agents"]) == (scenario, agents)
            }
            ks = sorted({k for k, _ in mine})
            base = mine.get((0, "uncoded"), 1.0)
            paper_base = paper.get((0, "uncoded"))
            for position, code in enumerate(codes):
                xs = np.arange(len(ks)) + (position - (len(codes) - 1) / 2) * width
                axes.bar(xs, [mine.get((k, code), np.nan) / base for k in ks], width, label=code)
                if paper_base:
                    axes.scatter(
                        xs,
                        [paper.get((k, code), np.nan) / paper_base for k in ks],
                        color="black",
                        s=8,
                        zorder=3,
                    )
            axes.set_xticks(range(len(ks)), [f"k={k}" for k in ks])
            axes.set_title(f"{scenario.replace('_', ' ')}, M={agents}", fontsize=9)
            axes.set_ylabel("round time / uncoded k=0", fontsize=8)
        for axes in list(axes_grid.flat)[len(groups) :]:
            axes.axis("off")
        axes_grid.flat[0].legend(fontsize=7, title="bars: marlplug; dots: paper", title_fontsize=7)
    return path


def markdown_table(rows: list[dict[str, Any]], reference: list[dict[str, Any]]) -> str:
    """Per-round times, ours (seconds) and the paper's (their unit), one line per (scenario, M, k)."""
    paper = {
        (r["scenario"], r["agents"], r["stragglers"], r["code"]): r["time_s"] for r in reference
    }
    codes = [c for c in CODES if any(r["code"] == c for r in rows)]
    mine = {(r["scenario"], r["agents"], r["stragglers"], r["code"]): r["round_s"] for r in rows}
    header = "| scenario | M | k | " + " | ".join(codes) + " | paper: " + " / ".join(codes) + " |"
    lines = [header, "|" + "---|" * (3 + len(codes) + 1)]
    for key in sorted({k[:3] for k in mine}):
        ours = " | ".join(f"{mine.get((*key, c), float('nan')):.3f}" for c in codes)
        theirs = " / ".join(f"{paper[(*key, c)]:.1f}" if (*key, c) in paper else "-" for c in codes)
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {ours} | {theirs} |")
    return "\n".join(lines)
