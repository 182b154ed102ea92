"""Straggler analysis: recovery, tolerance, conditioning, round times and the recommendation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from marlplug.coding import LDPCCode, MDSCode, ReplicationCode, UncodedScheme, VandermondeCode
from marlplug.coding.analysis import (
    AnalysisSettings,
    analyze_code,
    density,
    recommend,
    recovery_probabilities,
    tolerance_from_recovery,
)
from marlplug.coding.decoding import default_decoder
from marlplug.coding.stragglers import (
    STRAGGLER_STREAM,
    StragglerModel,
    first_decodable,
    learner_compute_s,
    simulate_round_times,
)
from marlplug.errors import UserError
from marlplug.seeding import derive_seed

FAST = {"rounds": 200, "samples": 300}


def test_uncoded_recovery_is_the_chance_of_missing_only_idle_learners() -> None:
    report = analyze_code("uncoded", UncodedScheme(), AnalysisSettings(8, 15, **FAST))
    for k, probability in report.recovery.items():
        assert probability == pytest.approx(math.comb(7, k) / math.comb(15, k))
    assert report.tolerance == 0 and report.recovery_exact
    assert report.density == pytest.approx(8 / 15)


def test_mds_tolerates_exactly_n_minus_m() -> None:
    report = analyze_code("mds", MDSCode(), AnalysisSettings(10, 15, **FAST))
    assert report.tolerance == 5
    assert report.recovery[6] == 0.0
    assert report.worst_condition <= 1e6 and report.condition_exact
    # with 1 straggler the round costs the full dense compute but never the delay
    assert report.expected_round_s == pytest.approx(10 * 0.1)


def test_vandermonde_is_reported_undecodable_at_the_default_limit() -> None:
    report = analyze_code("vandermonde", VandermondeCode(), AnalysisSettings(8, 15, **FAST))
    assert report.tolerance is None and math.isinf(report.expected_round_s)
    assert report.worst_condition > 1e11
    assert report.as_json()["expected_round_s"] is None


def test_monte_carlo_recovery_approximates_the_exact_enumeration() -> None:
    matrix = LDPCCode().assignment_matrix(8, 15)
    decoder = default_decoder(matrix)
    exact, is_exact = recovery_probabilities(15, decoder.can_decode, [3, 4])
    sampled, sampled_exact = recovery_probabilities(
        15, decoder.can_decode, [3, 4], max_subsets=100, samples=800
    )
    assert is_exact and not sampled_exact
    for k in (3, 4):
        assert sampled[k] == pytest.approx(exact[k], abs=0.06)


def test_tolerance_and_density_helpers() -> None:
    assert tolerance_from_recovery({0: 1.0, 1: 1.0, 2: 0.5, 3: 1.0}) == 1
    assert tolerance_from_recovery({0: 0.0, 1: 0.0}) is None
    assert density(ReplicationCode().assignment_matrix(3, 6)) == 1.0


def test_round_time_waits_for_the_first_decodable_prefix() -> None:
    finish = {0: 0.3, 1: 0.1, 2: math.inf}
    assert first_decodable(finish, lambda rows: rows == [0, 1]) == ([1, 0], 0.3)
    assert first_decodable({0: 0.1, 1: 0.2}, lambda rows: False) == ([0, 1], math.inf)
    assert learner_compute_s(np.eye(3, 2), 0.5).tolist() == [0.5, 0.5, math.inf]


def test_simulated_rounds_are_seeded_and_match_the_paper_model() -> None:
    matrix = UncodedScheme().assignment_matrix(2, 4)
    can_decode = default_decoder(matrix).can_decode
    model = StragglerModel(count=1, delay_s=1.0)
    first = simulate_round_times(
        matrix, model, compute_s=0.1, can_decode=can_decode, rounds=400, seed=3
    )
    again = simulate_round_times(
        matrix, model, compute_s=0.1, can_decode=can_decode, rounds=400, seed=3
    )
    assert np.array_equal(first, again)
    assert set(np.round(first, 6)) == {0.1, 1.1}
    assert first.mean() == pytest.approx(
        0.1 + 0.5, abs=0.08
    )  # the straggler hits a busy learner half the time


def test_the_runtime_stream_and_the_analysis_draw_the_same_stragglers() -> None:
    """One model: a round's delays from the model's own stream are a draw from its generator."""
    for model in (
        StragglerModel("fixed", count=2, delay_s=0.25, seed=4),
        StragglerModel("random", probability=0.3, delay_s=1.0, seed=4),
    ):
        twin = StragglerModel(model.model, model.count, model.probability, model.delay_s, seed=4)
        rng = np.random.default_rng(derive_seed(4, STRAGGLER_STREAM))
        for _ in range(20):
            assert (
                list(twin.delays([1, 3, 5, 7]).values()) == model.draw([1, 3, 5, 7], rng).tolist()
            )


def test_a_fixed_count_beyond_the_candidates_delays_them_all() -> None:
    delays = StragglerModel(count=5, delay_s=1.0).draw(range(4), np.random.default_rng(0))
    assert delays.tolist() == [1.0, 1.0, 1.0, 1.0]


def test_recommendation_prefers_the_fastest_then_the_cheapest() -> None:
    settings = AnalysisSettings(
        8, 15, compute_s=0.01, stragglers=StragglerModel(count=3, delay_s=1.0), **FAST
    )
    reports = [
        analyze_code(name, code, settings)
        for name, code in [
            ("uncoded", UncodedScheme()),
            ("mds", MDSCode()),
            ("vandermonde", VandermondeCode()),
        ]
    ]
    choice = recommend(reports)
    assert choice is not None and choice[0] == "mds"
    assert recommend([reports[2]]) is None


def test_settings_reject_impossible_sizes() -> None:
    with pytest.raises(
        UserError, match=r"learners: must be at least the number of agents \(8\), got 5"
    ):
        AnalysisSettings(8, 5)
    with pytest.raises(UserError, match="stragglers: must be between 0 and N=15"):
        AnalysisSettings(8, 15, stragglers=StragglerModel(count=16, delay_s=1.0))
