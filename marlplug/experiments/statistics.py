"""Aggregate results over seeds the way RL papers report them (Agarwal et al., 2021, through their
rliable library): IQM, mean and median with stratified bootstrap confidence intervals, the
probability of improvement, performance profiles and sample-efficiency curves with bands.

Every estimate takes a ``seed``: the same results and seed give the same intervals. Scores are ``[runs, tasks]`` arrays (one task per configuration
here: a sweep trains one scenario).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from marlplug.errors import UserError

#: The coverage of every interval.
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Estimate:
    """A point estimate and its 95% bootstrap interval.

    Examples:
        >>> Estimate(0.5, 0.4, 0.6).describe()
        '0.500 [0.400, 0.600]'
    """

    point: float
    low: float
    high: float

    def describe(self, digits: int = 3) -> str:
        return f"{self.point:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


@dataclass(frozen=True)
class Aggregates:
    """A configuration's final results over its runs."""

    runs: int
    iqm: Estimate
    mean: Estimate
    median: Estimate


def _rliable() -> tuple[Any, Any]:
    """rliable's ``library`` and ``metrics`` modules; a one-line error naming the extra when rliable
    is not installed."""
    try:
        from rliable import library, metrics
    except ImportError as exc:
        raise UserError(
            f"compare: the statistics need the rliable package ({exc}); "
            "pip install 'marlplug[stats]'"
        ) from None
    return library, metrics


def _interval_estimates(
    scores: Mapping[str, Any], func: Callable[..., np.ndarray], *, reps: int, seed: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    library, _ = _rliable()
    # rliable draws its resampling indices from numpy's global RNG (its random_state argument
    # reaches only arch's unused generator): seed that, and put it back afterwards. Each
    # configuration is resampled from the same seed on its own, so its interval does not depend on
    # which other configurations share the call or in what order.
    previous = np.random.get_state()
    points: dict[str, np.ndarray] = {}
    intervals: dict[str, np.ndarray] = {}
    try:
        for name, values in scores.items():
            np.random.seed(seed)
            point, interval = library.get_interval_estimates(
                {name: values}, func, reps=reps, confidence_interval_size=CONFIDENCE
            )
            points[name], intervals[name] = point[name], interval[name]
    finally:
        np.random.set_state(previous)
    return points, intervals


def aggregate(
    scores: Mapping[str, np.ndarray], *, reps: int = 2000, seed: int = 0
) -> dict[str, Aggregates]:
    """IQM, mean and median (over all runs' scores) of each configuration's ``[runs, tasks]``
    scores, with intervals.

    Examples:
        >>> result = aggregate({"a": np.array([[1.0], [2.0], [3.0], [4.0], [100.0]])}, reps=200)
        >>> result["a"].iqm.point, result["a"].median.point, result["a"].mean.point
        (3.0, 3.0, 22.0)
    """
    _, metrics = _rliable()

    def three(x: np.ndarray) -> np.ndarray:
        # rliable's aggregate_median is the median over tasks of each task's mean over runs: with
        # one task it is the mean. The median here is over every run's score.
        return np.array([metrics.aggregate_iqm(x), metrics.aggregate_mean(x), np.median(x)])

    points, intervals = _interval_estimates(scores, three, reps=reps, seed=seed)
    return {
        name: Aggregates(
            runs=len(scores[name]),
            **{
                field: Estimate(
                    float(points[name][i]),
                    float(intervals[name][0][i]),
                    float(intervals[name][1][i]),
                )
                for i, field in enumerate(("iqm", "mean", "median"))
            },
        )
        for name in scores
    }


def probability_of_improvement(
    better: np.ndarray, baseline: np.ndarray, *, reps: int = 2000, seed: int = 0
) -> Estimate:
    """P(X > Y): the chance that a run of ``better`` scores above a run of ``baseline`` (ties count
    half), averaged over tasks, with its interval.

    Examples:
        >>> p = probability_of_improvement(np.array([[2.0], [3.0]]), np.array([[1.0], [2.0]]), reps=100)
        >>> p.point
        0.875
    """
    _, metrics = _rliable()
    points, intervals = _interval_estimates(
        {"pair": (better, baseline)}, metrics.probability_of_improvement, reps=reps, seed=seed
    )
    low, high = np.asarray(intervals["pair"]).ravel()
    return Estimate(float(points["pair"]), float(low), float(high))


def performance_profiles(
    scores: Mapping[str, np.ndarray], thresholds: np.ndarray, *, reps: int = 2000, seed: int = 0
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per configuration, the fraction of runs scoring above each threshold and its ``[2, T]``
    interval (rliable's score distribution).

    Examples:
        >>> profile, band = performance_profiles({"a": np.array([[0.2], [0.6]])}, np.array([0.0, 0.5, 1.0]), reps=50)["a"]
        >>> profile.tolist(), band.shape
        ([1.0, 0.5, 0.0], (2, 3))
    """
    library, _ = _rliable()
    score_distributions = library.score_distributions

    def profile(x: np.ndarray) -> np.ndarray:
        return np.asarray(score_distributions(x, thresholds))

    points, intervals = _interval_estimates(scores, profile, reps=reps, seed=seed)
    return {name: (points[name], np.asarray(intervals[name])) for name in scores}


def iqm_curves(
    curves: Mapping[str, np.ndarray], *, reps: int = 2000, seed: int = 0
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per configuration, the IQM over runs at each evaluation point of ``[runs, tasks, points]``
    curves and its ``[2, points]`` interval.

    Examples:
        >>> curve, band = iqm_curves({"a": np.array([[[0.0, 1.0]], [[0.0, 3.0]]])}, reps=50)["a"]
        >>> curve.tolist(), band.shape
        ([0.0, 2.0], (2, 2))
    """
    _, metrics = _rliable()

    def iqm_at_each_point(x: np.ndarray) -> np.ndarray:
        return np.array([metrics.aggregate_iqm(x[..., point]) for point in range(x.shape[-1])])

    points, intervals = _interval_estimates(curves, iqm_at_each_point, reps=reps, seed=seed)
    return {name: (points[name], np.asarray(intervals[name])) for name in curves}
