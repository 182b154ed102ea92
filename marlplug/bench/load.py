"""``marlplug bench load``: what a busy machine costs a run, measured on yours.

One config is trained idle and beside a load, alternating, for each ``train.torch_threads``
setting asked for; every run is its own ``marlplug train`` process (a few updates, no evaluations,
in a temporary folder), as a user starts it. A load is one process pinned to the last CPU this
process may use, the other work of a shared machine:

- ``busy``: a Python busy loop (a notebook cell, a single-threaded job);
- ``memory``: a loop copying 256 MB arrays (memory bandwidth, as a large simulation batch uses);
- ``train``: a second ``marlplug train`` of the same config on one thread (a sweep's neighbour).

Frames/s leave out the first update (start-up, warm-up): frames of updates 2..N over their collect
and update seconds, from the run's ``rounds.csv``. Each cell is the median of ``--repeats``; the
ratios are loaded over idle for the same threads, and loaded over the same load on one thread (with
``--threads 1`` among the settings). ``collect x`` and ``update x`` say which part slowed down.

Examples:
    marlplug bench load
    marlplug bench load marlplug/configs/spread_vmas.yaml --load busy --load memory
    marlplug bench load --threads auto --threads 2 --threads 1 --repeats 5 --json
"""

from __future__ import annotations

import csv
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import click

from marlplug.bench.startup import marlplug_executable
from marlplug.errors import UserError
from marlplug.runs.machine import cpu_model
from marlplug.train.threads import CPU_SHARE_ENV, usable_cpus

#: The packaged config measured by default: the one the issue found collapsing (M = 32).
DEFAULT_CONFIG = "spread_vmas_m32.yaml"
#: Each load's program, run with ``python -c`` pinned to one CPU.
LOADS = {
    "busy": "while True:\n    pass",
    "memory": (
        "import numpy\n"
        "source = numpy.ones(64 * 2**20, dtype=numpy.float32)\n"
        "target = numpy.empty_like(source)\n"
        "while True:\n    numpy.copyto(target, source)"
    ),
    "train": "",  # marlplug train of the measured config itself: see _load_command
}


def _load_command(load: str, config: Path, folder: Path) -> list[str]:
    if load != "train":
        return [sys.executable, "-c", LOADS[load]]
    return [
        *marlplug_executable(),
        "train",
        str(config),
        "--no-progress",
        *_sets(
            "train.torch_threads=1",
            "train.updates=100000",
            "train.eval_every=0",
            "train.checkpoint_every=100000",
            f"logging.dir={folder}",
            "logging.run_name=load",
        ),
    ]


def _sets(*assignments: str) -> list[str]:
    return [part for assignment in assignments for part in ("--set", assignment)]


@contextmanager
def running_load(load: str | None, config: Path, folder: Path) -> Iterator[None]:
    """``load`` running on the last usable CPU (nothing for ``None``) while the block runs."""
    if load is None:
        yield
        return
    cpu = usable_cpus()[-1]
    process = subprocess.Popen(
        _load_command(load, config, Path(tempfile.mkdtemp(dir=folder))),  # a run folder each time
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
        start_new_session=True,
    )
    try:
        time.sleep(2.0 if load == "train" else 0.5)  # let it get going
        yield
        # A load that ended early would make a loaded figure an idle one.
        if process.poll() is not None:
            raise UserError(
                f"--load {load}: the load ended while the run was measured "
                f"(status {process.returncode}); nothing is reported"
            )
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def train_once(
    config: Path, threads: str, *, updates: int, sets: Sequence[str]
) -> dict[str, float]:
    """One ``marlplug train`` of ``config``: frames/s and per-update collect and update seconds,
    updates 2..N (the first is warm-up)."""
    with tempfile.TemporaryDirectory() as folder:
        command = [
            *marlplug_executable(),
            "train",
            str(config),
            "--no-progress",
            *_sets(
                f"train.torch_threads={threads}",
                f"train.updates={updates}",
                "train.eval_every=0",
                f"train.checkpoint_every={updates}",
                f"logging.dir={folder}",
                "logging.run_name=measured",
                *sets,
            ),
        ]
        environment = {key: value for key, value in os.environ.items() if key != CPU_SHARE_ENV}
        done = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise UserError(f"bench load: marlplug train exited {done.returncode}: {last}")
        with (Path(folder) / "measured" / "rounds.csv").open() as file:
            rows = list(csv.DictReader(file))
    frames = int(rows[-1]["env_steps"]) - int(rows[0]["env_steps"])
    timed = rows[1:]
    collect = [float(row["collect_s"]) for row in timed]
    update = [float(row["update_s"]) for row in timed]
    return {
        "fps": frames / (sum(collect) + sum(update)),
        "collect_s": statistics.median(collect),
        "update_s": statistics.median(update),
    }


def measure(
    config: Path,
    *,
    loads: Sequence[str],
    threads: Sequence[str],
    updates: int,
    repeats: int,
    sets: Sequence[str] = (),
    progress: bool = True,
) -> dict[str, Any]:
    """Every ``threads`` setting idle and beside every load, ``repeats`` times, alternating.

    Examples:
        >>> config = resources.files("marlplug.configs").joinpath("spread_vmas.yaml")
        >>> out = measure(Path(str(config)), loads=["busy"], threads=["1"], updates=2, repeats=1,
        ...               sets=["train.num_envs=8"], progress=False)  # doctest: +SKIP
        >>> [(row["threads"], row["load"]) for row in out["rows"]]  # doctest: +SKIP
        [('1', 'idle'), ('1', 'busy')]
    """
    conditions: list[str | None] = [None, *loads]
    samples: dict[tuple[str, str], list[dict[str, float]]] = {}
    total, done = repeats * len(threads) * len(conditions), 0
    with tempfile.TemporaryDirectory() as folder:
        for repeat in range(repeats):
            order = conditions if repeat % 2 == 0 else conditions[::-1]
            for setting in threads:
                for load in order:
                    with running_load(load, config, Path(folder)):
                        sample = train_once(config, setting, updates=updates, sets=sets)
                    samples.setdefault((setting, load or "idle"), []).append(sample)
                    done += 1
                    if progress:
                        click.echo(
                            f"bench load: {done}/{total} threads {setting}, {load or 'idle'}: "
                            f"{sample['fps']:,.0f} frames/s",
                            err=True,
                        )
    return {
        "config": str(config),
        "updates": updates,
        "repeats": repeats,
        "cpu": cpu_model(),
        "cpus": len(usable_cpus()),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "rows": _rows(samples, threads, ["idle", *loads]),
    }


def _rows(
    samples: dict[tuple[str, str], list[dict[str, float]]],
    threads: Sequence[str],
    conditions: Sequence[str],
) -> list[dict[str, Any]]:
    def median(setting: str, load: str, key: str) -> float:
        return statistics.median(sample[key] for sample in samples[(setting, load)])

    rows = []
    for setting in threads:
        for load in conditions:
            fps = median(setting, load, "fps")
            row: dict[str, Any] = {
                "threads": setting,
                "load": load,
                "fps": round(fps, 1),
                "fps_samples": [round(s["fps"], 1) for s in samples[(setting, load)]],
                "collect_s": round(median(setting, load, "collect_s"), 3),
                "update_s": round(median(setting, load, "update_s"), 3),
                "vs_idle": round(fps / median(setting, "idle", "fps"), 3),
                "collect_vs_idle": _ratio(
                    median(setting, load, "collect_s"), median(setting, "idle", "collect_s")
                ),
                "update_vs_idle": _ratio(
                    median(setting, load, "update_s"), median(setting, "idle", "update_s")
                ),
            }
            if "1" in threads:
                row["vs_one_thread"] = round(fps / median("1", load, "fps"), 3)
            rows.append(row)
    return rows


def _ratio(loaded: float, idle: float) -> float | None:
    """``loaded / idle`` to 2 digits; ``None`` when the idle run spent no time there (a replay
    algorithm's updates before ``learning_starts``).

    Examples:
        >>> _ratio(0.03, 0.01), _ratio(0.0, 0.0)
        (3.0, None)
    """
    return round(loaded / idle, 2) if idle > 0 else None


def _cell(ratio: float | None, width: int) -> str:
    return f"{ratio:>{width}.2f}" if ratio is not None else f"{'-':>{width}}"


def format_table(out: dict[str, Any]) -> str:
    """The human table: one line per threads setting and load."""
    lines = [
        f"{Path(out['config']).name}: {out['updates']} updates a run (the first left out), median "
        f"of {out['repeats']}; {out['cpu']}, {out['cpus']} CPUs; loads pinned to the last CPU",
        f"{'threads':<9}{'load':<8}{'frames/s':>10}{'x idle':>8}{'x 1 thread':>11}"
        f"{'collect x':>11}{'update x':>10}",
    ]
    for row in out["rows"]:
        one = f"{row['vs_one_thread']:.2f}" if "vs_one_thread" in row else "-"
        lines.append(
            f"{row['threads']:<9}{row['load']:<8}{row['fps']:>10,.0f}{row['vs_idle']:>8.2f}"
            f"{one:>11}{_cell(row['collect_vs_idle'], 11)}{_cell(row['update_vs_idle'], 10)}"
        )
    return "\n".join(lines)


@click.command()
@click.argument(
    "config",
    required=False,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
)
@click.option(
    "--load",
    "loads",
    multiple=True,
    type=click.Choice(sorted(LOADS)),
    help="What runs beside (repeatable); default: busy.",
)
@click.option(
    "--threads",
    "threads",
    multiple=True,
    help="train.torch_threads settings to compare (repeatable); default: auto and 1.",
)
@click.option(
    "--updates", default=4, show_default=True, type=click.IntRange(min=2), help="Updates a run."
)
@click.option(
    "--repeats", default=3, show_default=True, type=click.IntRange(min=1), help="Runs a cell."
)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Config overrides.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for tools.")
def load(
    config: Path | None,
    loads: tuple[str, ...],
    threads: tuple[str, ...],
    updates: int,
    repeats: int,
    sets: tuple[str, ...],
    as_json: bool,
) -> None:
    """A config trained idle and beside a load (a busy core, memory traffic, another run): the
    frames/s it keeps, per torch_threads setting."""
    if len(usable_cpus()) < 2:
        raise UserError("bench load: needs 2 or more CPUs (the load takes one)")
    path = config or Path(str(resources.files("marlplug.configs").joinpath(DEFAULT_CONFIG)))
    out = measure(
        path,
        loads=list(loads) or ["busy"],
        threads=list(threads) or ["auto", "1"],
        updates=updates,
        repeats=repeats,
        sets=sets,
    )
    click.echo(json.dumps(out, indent=2) if as_json else format_table(out))
