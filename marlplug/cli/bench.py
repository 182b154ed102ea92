"""``marlplug bench ...``: benchmarks that compare implementations side by side and print ratios."""

from __future__ import annotations

import click

from marlplug.cli.main import LazyGroup

#: ``marlplug bench <name>`` -> ``"module:click_command"``.
BENCHMARKS: dict[str, str] = {
    "coding": "marlplug.distributed.bench:coding",
    "decode": "marlplug.coding.bench:decode",
    "envs": "marlplug.envs.bench:envs",
    "loss": "marlplug.losses.bench:loss",
    "train": "marlplug.train.bench:train",
}


@click.group(cls=LazyGroup, lazy_commands=BENCHMARKS)
def bench() -> None:
    """Measure speed; every benchmark runs its comparisons in one process and prints ratios."""
