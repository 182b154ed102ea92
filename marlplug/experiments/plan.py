"""What a sweep runs: the seeds (``--seeds 0-4``), the grid (``--grid key=v1,v2``) and their product,
one :class:`PlannedRun` per configuration and seed, each checked as a config before anything runs."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from marlplug.config import MarlplugConfig, load_config
from marlplug.config.messages import clip
from marlplug.errors import UserError

#: Most runs one sweep may plan (a typo such as ``--seeds 0-99999`` fails at once).
MAX_RUNS = 10_000

_SEED_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def parse_seeds(text: str) -> list[int]:
    """``"0-4"``, ``"0,2,5"`` or ``"0-2,7"`` -> the seeds, in order, without repeats.

    Examples:
        >>> parse_seeds("0-4")
        [0, 1, 2, 3, 4]
        >>> parse_seeds("3, 1-2,3")
        [3, 1, 2]
        >>> parse_seeds("0-x")
        Traceback (most recent call last):
        ...
        marlplug.errors.UserError: --seeds: '0-x' is not a seed list; write e.g. 0-4 or 0,1,2 or 0-2,7
    """
    seeds: list[int] = []
    for part in text.split(","):
        match = _SEED_RANGE.match(part)
        if match is None or (match[2] is not None and int(match[2]) < int(match[1])):
            raise UserError(
                f"--seeds: '{clip(text)}' is not a seed list; write e.g. 0-4 or 0,1,2 or 0-2,7"
            )
        first = int(match[1])
        last = int(match[2]) if match[2] is not None else first
        if last - first >= MAX_RUNS:
            raise UserError(f"--seeds: '{clip(text)}' names more than {MAX_RUNS} seeds")
        seeds += [seed for seed in range(first, last + 1) if seed not in seeds]
    return seeds


def split_values(text: str) -> list[str]:
    """Split ``v1,v2,...`` on the commas outside brackets, braces and quotes, so that a value may
    be a YAML list or mapping.

    Examples:
        >>> split_values("0.001,0.003")
        ['0.001', '0.003']
        >>> split_values("[],[{name: redundancy, coef: 0.01}]")
        ['[]', '[{name: redundancy, coef: 0.01}]']
        >>> split_values("'a,b',c")
        ["'a,b'", 'c']
    """
    values, current, depth, quote = [], "", 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            values.append(current.strip())
            current = ""
            continue
        current += char
    values.append(current.strip())
    return values


@dataclass(frozen=True)
class GridAxis:
    """One ``--grid KEY=v1,v2,...``: a config key and the values it takes."""

    key: str
    values: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> GridAxis:
        """Examples:
        >>> GridAxis.parse("train.lr=0.001,0.003")
        GridAxis(key='train.lr', values=('0.001', '0.003'))
        >>> GridAxis.parse("train.lr")
        Traceback (most recent call last):
        ...
        marlplug.errors.UserError: --grid 'train.lr': expected KEY=V1,V2,..., e.g. train.lr=0.001,0.003
        """
        key, sep, values = text.partition("=")
        parsed = tuple(split_values(values)) if sep else ()
        if not key.strip() or not parsed or any(not value for value in parsed):
            raise UserError(
                f"--grid '{clip(text)}': expected KEY=V1,V2,..., e.g. train.lr=0.001,0.003"
            )
        return cls(key.strip(), parsed)


@dataclass(frozen=True)
class Configuration:
    """One point of the grid: its name in results and plots, and its ``--set`` overrides."""

    name: str
    overrides: tuple[str, ...]
    """The sweep's ``--set`` overrides, then this point's grid values."""

    @property
    def folder(self) -> str:
        """A file-name-safe form of :attr:`name`."""
        return re.sub(r"[^A-Za-z0-9._=+-]+", "_", self.name).strip("_") or "configuration"


@dataclass(frozen=True)
class PlannedRun:
    """One training run of a sweep: a configuration with one seed."""

    configuration: Configuration
    seed: int
    config: MarlplugConfig
    """The resolved config (checked before the sweep starts)."""

    @property
    def key(self) -> str:
        """Unique within a sweep: ``<configuration>/seed-<seed>``."""
        return f"{self.configuration.name}/seed-{self.seed}"

    def overrides(self) -> list[str]:
        """The ``--set`` arguments of this run's ``marlplug train``."""
        return [*self.configuration.overrides, f"seed={self.seed}"]


def configurations(
    name: str, overrides: Sequence[str], grid: Sequence[GridAxis]
) -> list[Configuration]:
    """Every point of the grid's product, named ``name`` alone without a grid, else by its values.

    Examples:
        >>> [c.name for c in configurations("spread", [], [])]
        ['spread']
        >>> grid = [GridAxis("train.lr", ("1e-3", "3e-3")), GridAxis("train.n_epochs", ("5",))]
        >>> [c.name for c in configurations("spread", ["train.updates=2"], grid)]
        ['train.lr=1e-3 train.n_epochs=5', 'train.lr=3e-3 train.n_epochs=5']
        >>> configurations("spread", ["train.updates=2"], grid)[0].overrides
        ('train.updates=2', 'train.lr=1e-3', 'train.n_epochs=5')
    """
    keys = [axis.key for axis in grid]
    if len(set(keys)) != len(keys):
        raise UserError(f"--grid: a key is given twice ({', '.join(keys)}); one --grid per key")
    points = []
    for values in itertools.product(*(axis.values for axis in grid)):
        assignments = [f"{key}={value}" for key, value in zip(keys, values, strict=True)]
        points.append(
            Configuration(
                name=" ".join(assignments) if grid else name,
                overrides=(*overrides, *assignments),
            )
        )
    return points


def plan_runs(
    config_path: Path | None,
    *,
    name: str,
    seeds: Sequence[int],
    overrides: Sequence[str] = (),
    grid: Sequence[GridAxis] = (),
) -> list[PlannedRun]:
    """Every run of the sweep, each config loaded and checked now, so that a bad value fails before
    the first run starts (in one line naming the ``--set``/``--grid`` key).

    Examples:
        >>> runs = plan_runs(None, name="default", seeds=[0, 1], grid=[GridAxis.parse("train.lr=1e-3,3e-3")])
        >>> [run.key for run in runs]
        ['train.lr=1e-3/seed-0', 'train.lr=1e-3/seed-1', 'train.lr=3e-3/seed-0', 'train.lr=3e-3/seed-1']
        >>> runs[3].config.train.lr, runs[3].config.seed
        (0.003, 1)
    """
    points = configurations(name, overrides, grid)
    if len(points) * len(seeds) > MAX_RUNS:
        raise UserError(
            f"sweep: {len(points)} configurations x {len(seeds)} seeds is more than {MAX_RUNS} runs"
        )
    runs = []
    for point in points:
        for seed in seeds:
            run_overrides = [*point.overrides, f"seed={seed}"]
            runs.append(PlannedRun(point, seed, load_config(config_path, run_overrides)))
    return runs
