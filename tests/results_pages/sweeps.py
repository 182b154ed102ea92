"""Statistics of the sweeps under docs/data/, as the results pages print them: each through
``marlplug compare``'s own code, with its default seed and resamples."""

from __future__ import annotations

import statistics

from marlplug.experiments.compare import Comparison, Metric, compare, gather
from marlplug.experiments.results import RunResult, load_results
from marlplug.experiments.statistics import Estimate
from tests.results_tables import DATA, number


def percent(share: float) -> str:
    """
    Examples:
        >>> percent(0.4285)
        '43%'
    """
    return f"{round(share * 100)}%"


def duration(seconds: float) -> str:
    """
    Examples:
        >>> duration(112), duration(309), duration(45)
        ('1 min 52 s', '5 min 9 s', '45 s')
    """
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def estimate(value: Estimate, *, digits: int = 3) -> str:
    """``0.919 [0.905, 0.928]``, in the pages' number format."""
    point, low, high = (number(v, digits=digits) for v in (value.point, value.low, value.high))
    return f"{point} [{low}, {high}]"


def runs(name: str) -> list[RunResult]:
    """A sweep's runs in seed order."""
    return sorted(load_results(DATA / name).runs, key=lambda run: run.seed)


def comparison(*names: str, metric: Metric = "score") -> Comparison:
    """What ``marlplug compare docs/data/NAME ...`` reports (the first file is the baseline)."""
    groups = gather([(DATA / name, load_results(DATA / name)) for name in names])
    return compare(groups, metric=metric)


def iqm(name: str, *, metric: Metric = "score", digits: int = 3) -> str:
    (aggregates,) = comparison(name, metric=metric).aggregates.values()
    return estimate(aggregates.iqm, digits=digits)


def improvement(better: str, baseline: str) -> str:
    """P(a run of ``better`` scores above a run of ``baseline``), with its interval."""
    (value,) = comparison(baseline, better).improvement.values()
    return estimate(value, digits=2)


def scores(name: str) -> list[str]:
    return [number(run.evaluation.score or 0.0, digits=3) for run in runs(name)]


def returns(name: str, *, digits: int = 1) -> list[str]:
    return [number(run.evaluation.mean, digits=digits) for run in runs(name)]


def wall_times(name: str) -> list[str]:
    return [number(run.wall_seconds, digits=0) for run in runs(name)]


def median_of(values: list[float]) -> float:
    return float(statistics.median(values))
