"""The aggregates against their definitions, and intervals that are reproducible and sensible."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from marlplug.experiments.statistics import (
    aggregate,
    iqm_curves,
    performance_profiles,
    probability_of_improvement,
)

finite = st.floats(-100, 100, allow_nan=False)


@settings(max_examples=20, deadline=None)
@given(st.lists(finite, min_size=1, max_size=12))
def test_points_are_iqm_mean_median_and_lie_in_their_intervals(values: list[float]) -> None:
    scores = np.array(values)[:, None]
    result = aggregate({"a": scores}, reps=200)["a"]
    assert result.runs == len(values)
    assert result.iqm.point == pytest.approx(stats.trim_mean(values, 0.25))
    assert result.mean.point == pytest.approx(np.mean(values))
    assert result.median.point == pytest.approx(np.median(values))
    for estimate in (result.iqm, result.mean, result.median):
        assert min(values) - 1e-9 <= estimate.low <= estimate.high <= max(values) + 1e-9


def test_intervals_repeat_with_the_seed_and_change_without_it() -> None:
    scores = {"a": np.random.default_rng(0).normal(size=(10, 1))}
    first, again = aggregate(scores, seed=1), aggregate(scores, seed=1)
    other = aggregate(scores, seed=2)
    assert first == again
    assert first["a"].iqm.low != other["a"].iqm.low


def test_a_configurations_intervals_do_not_depend_on_its_company() -> None:
    # A results page quotes one configuration's interval; `marlplug compare a b` must give it the
    # same one as `marlplug compare a` (before, all groups drew from one stream in turn).
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 1)), rng.normal(size=(7, 1))
    alone = aggregate({"a": a}, reps=300)["a"]
    assert aggregate({"b": b, "a": a}, reps=300)["a"] == alone
    assert aggregate({"a": a, "b": b}, reps=300)["a"] == alone
    curve = a.repeat(4, axis=1) + np.arange(4)
    together = iqm_curves({"b": rng.normal(size=(5, 4)), "a": curve}, reps=300)["a"]
    on_its_own = iqm_curves({"a": curve}, reps=300)["a"]
    assert all(np.array_equal(x, y) for x, y in zip(together, on_its_own, strict=True))


def test_probability_of_improvement() -> None:
    low, high = np.arange(5.0)[:, None], np.arange(5.0)[:, None] + 10
    assert probability_of_improvement(high, low).point == 1.0
    assert probability_of_improvement(low, high).point == 0.0
    same = probability_of_improvement(low, low)
    assert same.point == 0.5
    assert same.low < 0.5 < same.high


def test_profiles_and_curves_have_bands_around_them() -> None:
    scores = {"a": np.array([[0.1], [0.4], [0.9]])}
    thresholds = np.array([0.0, 0.5, 1.0])
    profile, band = performance_profiles(scores, thresholds, reps=200)["a"]
    assert profile.tolist() == pytest.approx([1.0, 1 / 3, 0.0])
    assert np.all(band[0] <= profile + 1e-12) and np.all(profile <= band[1] + 1e-12)
    curves = {"a": np.array([[[0.0, 1.0, 2.0]], [[0.0, 2.0, 4.0]], [[0.0, 3.0, 6.0]]])}
    curve, curve_band = iqm_curves(curves, reps=200)["a"]
    assert curve.tolist() == pytest.approx([0.0, 2.0, 4.0])
    assert curve_band.shape == (2, 3)
