"""``marlplug bench cli``: start-up time of ``marlplug`` commands, each run as a fresh process.

Every command runs as its own process (the way a user types it), side by side with ``python -c pass``
(the interpreter's own start-up) in interleaved repeats: each repeat runs the commands in order,
the next one in reverse, so load from other processes on a shared machine hits them alike. One
untimed warm-up run per command fills the file cache. Each row reports the median wall time over
the repeats and its ratio to ``python -c pass``.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click

from marlplug.errors import UserError

#: ``marlplug`` arguments measured by default, cheapest first.
DEFAULT_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("--help",),
    ("plugins",),
    ("train", "--help"),
    ("config", "show"),
)
BASELINE = "python -c pass"


def marlplug_executable() -> list[str]:
    """How to start ``marlplug``: the console script next to this interpreter, as a user runs it.

    Without one (marlplug imported from a source folder, not installed), ``python -m
    marlplug.cli.main`` runs the same entry point.
    """
    script = Path(sys.executable).with_name("marlplug")
    if script.is_file():
        return [str(script)]
    found = shutil.which("marlplug")
    if found is not None:
        return [found]
    return [sys.executable, "-m", "marlplug.cli.main"]


def _run_once(argv: list[str], label: str) -> float:
    """Wall seconds of one run of ``argv``; a failing command is an error that shows its stderr."""
    start = time.perf_counter()
    completed = subprocess.run(argv, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if completed.returncode != 0:
        tail = completed.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise UserError(f"bench cli: '{label}' exited {completed.returncode}: {tail[0]}")
    return seconds


def measure(commands: list[tuple[str, ...]], *, repeats: int) -> list[dict[str, Any]]:
    """Median wall time of ``python -c pass`` and of ``marlplug <args>`` for each of ``commands``.

    Returns one row per command (the baseline first) with ``median_s``, ``min_s``, the per-repeat
    times and ``ratio``: the median over the baseline's median.

    Examples:
        >>> rows = measure([("--version",)], repeats=1)
        >>> [row["command"] for row in rows]
        ['python -c pass', 'marlplug --version']
        >>> rows[0]["ratio"]
        1.0
    """
    argvs = {BASELINE: [sys.executable, "-c", "pass"]}
    executable = marlplug_executable()
    for args in commands:
        argvs[" ".join(("marlplug", *args))] = [*executable, *args]
    labels = list(argvs)
    for label in labels:  # warm-up: the file cache, .pyc files
        _run_once(argvs[label], label)
    times: dict[str, list[float]] = {label: [] for label in labels}
    for repeat in range(repeats):
        for label in labels if repeat % 2 == 0 else reversed(labels):
            times[label].append(_run_once(argvs[label], label))
    baseline = statistics.median(times[BASELINE])
    return [
        {
            "command": label,
            "median_s": round(statistics.median(times[label]), 4),
            "min_s": round(min(times[label]), 4),
            "repeats": repeats,
            "times_s": [round(seconds, 4) for seconds in times[label]],
            "ratio": round(statistics.median(times[label]) / baseline, 1),
        }
        for label in labels
    ]


def format_table(rows: list[dict[str, Any]]) -> str:
    """The human table: one line per command."""
    width = max(len(row["command"]) for row in rows) + 2
    lines = [f"{'command':<{width}}{'median s':>10}{'min s':>9}{'x python':>10}"]
    for row in rows:
        lines.append(
            f"{row['command']:<{width}}{row['median_s']:>10.3f}{row['min_s']:>9.3f}"
            f"{row['ratio']:>9.1f}x"
        )
    return "\n".join(lines)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list for tools.")
@click.option(
    "--repeats",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="Timed runs of each command (after one warm-up run).",
)
@click.option(
    "--command",
    "commands",
    multiple=True,
    metavar="ARGS",
    help="marlplug arguments to time, e.g. --command 'codes --help' (repeatable); "
    "default: --help, plugins, train --help, config show.",
)
def cli(as_json: bool, repeats: int, commands: tuple[str, ...]) -> None:
    """Start-up time of marlplug commands as processes, side by side with `python -c pass`."""
    chosen = [tuple(c.split()) for c in commands] if commands else list(DEFAULT_COMMANDS)
    rows = measure(chosen, repeats=repeats)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    else:
        click.echo(format_table(rows))
