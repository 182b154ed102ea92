"""The built-in assignment matrices: the paper's constructions, validation and conditioning."""

from __future__ import annotations

import math

import numpy as np
import pytest

from marlplug.coding import (
    CodingScheme,
    InvalidCodeError,
    LDPCCode,
    MDSCode,
    RandomSparseCode,
    ReplicationCode,
    UncodedScheme,
    VandermondeCode,
    gf2,
    validate_assignment_matrix,
    worst_condition,
)
from marlplug.coding.codes.ldpc import array_parity_check
from marlplug.errors import ConfigError
from marlplug.plugins import get_plugin_manager


def test_builtin_codes_are_registered_through_the_entry_point() -> None:
    registry = get_plugin_manager().registry("code")
    for name in ("uncoded", "replication", "mds", "vandermonde", "random_sparse", "ldpc"):
        assert registry.entry(name).distribution == "marlplug"


def test_uncoded_uses_m_learners_and_leaves_the_rest_idle() -> None:
    matrix = UncodedScheme().assignment_matrix(8, 15)
    assert np.array_equal(matrix[:8], np.eye(8))
    assert not matrix[8:].any()


def test_replication_assigns_round_robin() -> None:
    matrix = ReplicationCode().assignment_matrix(4, 10)
    assert (matrix.sum(axis=1) == 1).all()
    assert matrix.argmax(axis=1).tolist() == [j % 4 for j in range(10)]


def test_vandermonde_is_the_authors_exact_matrix() -> None:
    expected = np.vander(np.linspace(0.1, 0.5, 10), 15).T
    assert np.array_equal(VandermondeCode().assignment_matrix(10, 15), expected)


@pytest.mark.parametrize("num_agents", [8, 10])
@pytest.mark.parametrize("construction", ["gaussian", "chebyshev"])
def test_mds_worst_case_condition_over_every_subset_is_at_most_1e6(
    num_agents: int, construction: str
) -> None:
    matrix = MDSCode(construction=construction).assignment_matrix(num_agents, 15, seed=0)
    summary = worst_condition(matrix)
    assert summary.exact and summary.subsets == sum(math.comb(15, k) for k in range(num_agents, 16))
    assert summary.worst <= 1e6
    authors = worst_condition(VandermondeCode().assignment_matrix(num_agents, 15)).worst
    assert authors > 1e11  # the comparison the issue quotes: 1e12 to 1e13


def test_random_sparse_is_seeded_and_about_p_m_dense() -> None:
    code = RandomSparseCode(p_m=0.5)
    first = code.assignment_matrix(10, 40, seed=3)
    assert np.array_equal(first, code.assignment_matrix(10, 40, seed=3))
    assert not np.array_equal(first, code.assignment_matrix(10, 40, seed=4))
    assert 0.4 < np.count_nonzero(first) / first.size < 0.6


def test_random_sparse_gives_up_with_a_clear_error() -> None:
    with pytest.raises(
        InvalidCodeError, match=r"random_sparse\(p_m=0\.01.*M=5 agents, N=5 learners"
    ):
        RandomSparseCode(p_m=0.01, max_attempts=3).assignment_matrix(5, 5)


@pytest.mark.parametrize(("gamma", "num_agents"), [(3, 8), (2, 10)])
def test_array_ldpc_matches_the_authors_sizes(gamma: int, num_agents: int) -> None:
    matrix = LDPCCode(construction="array", p=3, rho=5, gamma=gamma).assignment_matrix(
        num_agents, 15
    )
    parity_check = array_parity_check(3, 5, gamma)
    assert set(np.unique(matrix)) == {0.0, 1.0}
    assert not (parity_check.astype(int) @ matrix.astype(int) % 2).any()  # codewords of H
    # systematic: M learners hold exactly one agent each, covering every agent
    single = matrix[matrix.sum(axis=1) == 1]
    assert set(single.argmax(axis=1).tolist()) == set(range(num_agents))


def test_gallager_ldpc_is_regular_and_has_dimension_m() -> None:
    matrix = LDPCCode(construction="gallager", d_v=3, d_c=5).assignment_matrix(8, 15, seed=2)
    assert matrix.shape == (15, 8)
    assert np.array_equal(
        matrix, LDPCCode(construction="gallager").assignment_matrix(8, 15, seed=2)
    )


def test_ldpc_errors_name_the_parameters() -> None:
    with pytest.raises(
        InvalidCodeError, match=r"ldpc\(construction='array'.*p=3, rho=5, gamma=2 gives M=10"
    ):
        LDPCCode(construction="array", gamma=2).assignment_matrix(8, 15)
    with pytest.raises(
        InvalidCodeError, match=r"no \(d_v, d_c\)-regular Gallager code has dimension M"
    ):
        LDPCCode().assignment_matrix(3, 5)


def test_gf2_rank_and_systematic_generator() -> None:
    parity_check = array_parity_check(3, 5, 3)
    assert gf2.rank(parity_check) == 7
    generator = gf2.systematic_generator(parity_check)
    assert generator.shape == (8, 15)
    assert not (generator.astype(int) @ parity_check.T.astype(int) % 2).any()


@pytest.mark.parametrize("scheme", [UncodedScheme(), MDSCode(), LDPCCode(), ReplicationCode()])
def test_fewer_learners_than_agents_is_an_error_naming_the_scheme(scheme: CodingScheme) -> None:
    with pytest.raises(
        InvalidCodeError, match=rf"{scheme.name}\(.*M=5 agents, N=4 learners: needs N >= M"
    ):
        scheme.assignment_matrix(5, 4)


def test_bad_options_are_config_errors_with_the_field_path() -> None:
    with pytest.raises(ConfigError, match=r"mds.construction"):
        MDSCode(construction="monomial")
    with pytest.raises(ConfigError, match=r"random_sparse.p_m"):
        RandomSparseCode(p_m=1.5)


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        (np.eye(3, 2, dtype=np.float32), "dtype float64"),
        (np.ones((3, 2)), "rank 1 < M=2"),
        (np.array([[1.0, 0.0], [0.0, np.nan], [1.0, 1.0]]), "non-finite"),
        (np.eye(3, 2), r"learners \[2\] are assigned no agent"),
        (np.eye(2), r"expected shape \(3, 2\)"),
    ],
)
def test_validation_names_what_is_wrong(matrix: np.ndarray, message: str) -> None:
    with pytest.raises(
        InvalidCodeError, match=rf"myscheme\(k=1\) with M=2 agents, N=3 learners: .*{message}"
    ):
        validate_assignment_matrix(matrix, 2, 3, scheme="myscheme(k=1)")


def test_a_scheme_returning_a_bad_matrix_is_reported_by_name() -> None:
    class Broken(CodingScheme):
        name = "broken"

        def build_matrix(self, num_agents: int, num_learners: int, seed: int) -> np.ndarray:
            return np.ones((num_learners, num_agents))

    with pytest.raises(InvalidCodeError, match=r"broken\(\) with M=2 agents, N=3 learners: rank 1"):
        Broken().assignment_matrix(2, 3)
