"""A sweep's results file: what ran (config, overrides, seeds, machine) and, per run, its final
evaluation and its curve of periodic evaluations. ``marlplug sweep`` writes it, after every finished
run, atomically; ``marlplug compare`` reads one or more."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from marlplug.config.messages import clip
from marlplug.errors import UserError
from marlplug.runs.machine import cpu_model

#: The ``format`` field of every results file; bump it when the layout changes.
RESULTS_FORMAT: Literal["marlplug-sweep/1"] = "marlplug-sweep/1"


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class CurvePoint(_Record):
    """One periodic evaluation of a run (``train.eval_every``)."""

    update: int
    frames: int
    mean: float
    """Team return, mean over the evaluation episodes."""
    score: float | None = None
    """Oracle-normalized score, where the scenario has a scripted policy."""


class FinalEvaluation(_Record):
    """``marlplug evaluate RUN --json`` on the run's final policy."""

    backend: str
    episodes: int
    seed: int
    mean: float
    std: float
    score: float | None = None
    group_means: dict[str, float] = {}


class RunResult(_Record):
    """One finished run of a sweep."""

    configuration: str
    seed: int
    run_dir: str
    """Relative to the results file's folder."""
    updates: int
    frames: int
    wall_seconds: float
    """Wall time of ``marlplug train`` (process start to exit), with the sweep's ``jobs`` running
    at once: a speed figure only when ``jobs`` was 1 on an idle machine, and the run not
    ``resumed``."""
    resumed: bool = False
    """Continued from a checkpoint of an interrupted sweep: ``wall_seconds`` is the last part."""
    evaluation: FinalEvaluation
    curve: list[CurvePoint] = []
    cpu: str = ""
    """The CPU model it trained on (:func:`cpu_model`)."""

    def value(self, metric: str) -> float | None:
        """The final ``score`` or ``return`` (``None``: the run has no score)."""
        return self.evaluation.mean if metric == "return" else self.evaluation.score


class Machine(_Record):
    """Where the sweep started (each run also records its CPU): results of the same seed differ
    across CPU models."""

    cpu: str
    cores: int
    platform: str
    python: str
    torch: str

    @classmethod
    def here(cls) -> Machine:
        import torch

        return cls(
            cpu=cpu_model(),
            cores=os.cpu_count() or 0,
            platform=platform.platform(),
            python=platform.python_version(),
            torch=torch.__version__,
        )


class SweepResults(_Record):
    """The whole results file."""

    format: Literal["marlplug-sweep/1"] = RESULTS_FORMAT
    name: str
    """The sweep's name (default: the config file's stem); labels its configurations in
    ``marlplug compare`` when there is no grid."""
    config: str
    """The config file every run trains."""
    overrides: list[str]
    grid: dict[str, list[str]]
    seeds: list[int]
    configurations: list[str]
    """Every configuration's name, in grid order (a run may still be missing)."""
    jobs: int
    machine: Machine
    runs: list[RunResult] = []

    def with_run(self, run: RunResult) -> SweepResults:
        """A copy holding ``run`` (replacing an earlier result of the same configuration and seed)."""
        kept = [
            old
            for old in self.runs
            if (old.configuration, old.seed) != (run.configuration, run.seed)
        ]
        return self.model_copy(update={"runs": [*kept, run]})

    def done(self, configuration: str, seed: int) -> bool:
        return any((r.configuration, r.seed) == (configuration, seed) for r in self.runs)

    def save(self, path: Path) -> None:
        """Write atomically: an interrupted sweep leaves the previous complete file."""
        from marlplug.runs.atomic_files import write_atomically

        text = json.dumps(self.model_dump(mode="json"), indent=1) + "\n"
        write_atomically(path, lambda stream: stream.write(text.encode()))


def load_results(path: Path, *, argument: str = "RESULTS") -> SweepResults:
    """Read a results file written by ``marlplug sweep``.

    Raises:
        UserError: one line naming ``path``: missing, not JSON, or not a sweep's results.

    Examples:
        >>> import tempfile
        >>> bad = Path(tempfile.mkdtemp()) / "x.json"
        >>> _ = bad.write_text('{"runs": 3}')
        >>> load_results(bad)
        Traceback (most recent call last):
        ...
        marlplug.errors.UserError: RESULTS: .../x.json is not a results file of marlplug sweep (name: Field required); give the file `marlplug sweep` wrote
    """
    try:
        data: Any = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{argument}: no such file: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{argument}: cannot read {path} as JSON ({clip(str(exc))})") from None
    try:
        return SweepResults.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the top level"
        raise UserError(
            f"{argument}: {path} is not a results file of marlplug sweep "
            f"({where}: {clip(first['msg'])}); give the file `marlplug sweep` wrote"
        ) from None
