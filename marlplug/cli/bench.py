"""``marlplug bench ...``: benchmarks that compare implementations side by side and print ratios."""

from __future__ import annotations

import click

from marlplug.cli.main import LazyCommand, LazyGroup

#: ``marlplug bench <name>`` -> the benchmark command, imported only when it runs.
BENCHMARKS: dict[str, LazyCommand] = {
    "benchmarl": LazyCommand(
        "marlplug.bench.benchmarl:benchmarl",
        "marlplug vs BenchMARL 1.5.2 (its own venv): training frames/s, same task and iteration "
        "shape.",
    ),
    "cli": LazyCommand(
        "marlplug.bench.startup:cli",
        "Start-up time of marlplug commands as processes, side by side with `python -c pass`.",
    ),
    "coding": LazyCommand(
        "marlplug.bench.coding:coding",
        "The paper's coded-training experiment: round time per code and number of stragglers.",
    ),
    "decode": LazyCommand(
        "marlplug.bench.decode:decode",
        "Decode time (median ms) and relative error of least squares, peeling and the authors' "
        "method.",
    ),
    "envs": LazyCommand(
        "marlplug.bench.envs:envs",
        "Joint env steps/s with random actions: PettingZoo/mpe vs VMAS, interleaved trials.",
    ),
    "learn": LazyCommand(
        "marlplug.bench.learn:learn",
        "marlplug's default config vs plain TorchRL MAPPO: evaluated return per frame budget and "
        "seed.",
    ),
    "load": LazyCommand(
        "marlplug.bench.load:load",
        "A config trained idle and beside a load (a busy core, memory traffic, another run): the "
        "frames/s it keeps, per torch_threads setting.",
    ),
    "loss": LazyCommand(
        "marlplug.bench.loss:loss",
        "JointPPOLoss vs M separate ClipPPOLoss and its GEMM floor; the redundancy penalty's cost.",
    ),
    "scaling": LazyCommand(
        "marlplug.bench.scaling:scaling",
        "Training frames/s on VMAS as env copies and agents grow, for any algorithm (--algorithm).",
    ),
    "train": LazyCommand(
        "marlplug.bench.train:train",
        "`marlplug train` vs a plain TorchRL MAPPO pipeline: frames/s and final mean return.",
    ),
}


@click.group(cls=LazyGroup, lazy_commands=BENCHMARKS)
def bench() -> None:
    """Measure speed; every benchmark runs its comparisons in one process and prints ratios."""
