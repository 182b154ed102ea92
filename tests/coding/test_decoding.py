"""Decoders: least squares over every received row, peeling, thresholds and large-tensor handling."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from marlplug.coding import (
    LDPCCode,
    LeastSquaresDecoder,
    MDSCode,
    NotDecodableError,
    PeelingDecoder,
    VandermondeCode,
    make_decoder,
)


def coded(matrix: np.ndarray, theta: torch.Tensor) -> torch.Tensor:
    return (torch.as_tensor(matrix, dtype=torch.float64) @ theta.double()).to(theta.dtype)


def relative_error(estimate: torch.Tensor, theta: torch.Tensor) -> float:
    return float((estimate.double() - theta.double()).norm() / theta.double().norm())


@pytest.mark.parametrize("num_agents", [8, 10])
def test_mds_any_m_rows_are_decodable(num_agents: int) -> None:
    matrix = MDSCode().assignment_matrix(num_agents, 15)
    decoder = LeastSquaresDecoder(matrix)
    for rows in itertools.combinations(range(15), num_agents):
        assert decoder.can_decode(list(rows)), rows
    assert not decoder.can_decode(list(range(num_agents - 1)))


def test_least_squares_uses_every_received_row() -> None:
    # With noisy results, more rows average the noise down: the first-M-rows answer is worse.
    rng = np.random.default_rng(0)
    matrix = MDSCode().assignment_matrix(4, 15)
    theta = torch.as_tensor(rng.standard_normal((4, 2000)))
    noisy = coded(matrix, theta) + 1e-3 * torch.as_tensor(rng.standard_normal((15, 2000)))
    errors = []
    for count in (4, 15):
        decoder = LeastSquaresDecoder(matrix)
        for learner in range(count):
            decoder.add(learner, noisy[learner])
        errors.append(relative_error(decoder.decode(), theta))
    assert errors[1] < errors[0] / 1.5


def test_ill_conditioned_subsets_are_not_decodable_until_the_limit_allows() -> None:
    matrix = VandermondeCode().assignment_matrix(8, 15)
    theta = torch.randn(8, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    strict, lenient = make_decoder(matrix), make_decoder(matrix, max_condition=float("inf"))
    results = coded(matrix, theta)
    for learner in range(8):  # the authors' first full-rank subset
        strict.add(learner, results[learner])
        lenient.add(learner, results[learner])
    assert not strict.decodable and lenient.decodable
    with pytest.raises(NotDecodableError, match=r"condition number .* limit 1e\+06"):
        strict.decode()
    assert relative_error(lenient.decode(), theta) > 1e-8  # float64 already loses half its digits


def test_decode_before_enough_rows_raises() -> None:
    decoder = make_decoder(MDSCode().assignment_matrix(3, 5))
    decoder.add(0, torch.zeros(4))
    assert not decoder.decodable
    with pytest.raises(NotDecodableError, match=r"learners \[0\]: rank 1 < 3 agents"):
        decoder.decode()


def test_results_are_kept_as_views_and_decoded_in_their_dtype() -> None:
    matrix = MDSCode().assignment_matrix(3, 5)
    theta = torch.randn(3, 1_000_000, generator=torch.Generator().manual_seed(1))
    results = coded(matrix, theta)
    decoder = make_decoder(matrix)
    for learner in (4, 0, 2):
        decoder.add(learner, results[learner])
        assert decoder._results[learner].data_ptr() == results[learner].data_ptr()  # no copy
    out = decoder.decode()
    assert out.shape == (3, 1_000_000) and out.dtype == torch.float32
    assert relative_error(out, theta) < 1e-5


def test_multidimensional_results_are_flattened() -> None:
    decoder = make_decoder(np.eye(2))
    decoder.add(0, torch.ones(2, 3))
    decoder.add(1, torch.zeros(2, 3))
    assert decoder.decode().shape == (2, 6)


def test_add_rejects_bad_results() -> None:
    decoder = make_decoder(np.eye(3, 2))
    with pytest.raises(IndexError, match="learner_index 3 out of range for N=3"):
        decoder.add(3, torch.zeros(2))
    with pytest.raises(TypeError, match="floating-point"):
        decoder.add(0, torch.zeros(2, dtype=torch.int64))
    decoder.add(0, torch.zeros(2))
    with pytest.raises(ValueError, match="learner 1: result has 3"):
        decoder.add(1, torch.zeros(3))


def test_a_second_answer_from_the_same_learner_is_ignored() -> None:
    decoder = make_decoder(np.eye(2))
    decoder.add(0, torch.ones(2))
    decoder.add(0, torch.full((2,), 5.0))
    decoder.add(1, torch.zeros(2))
    assert decoder.received == [0, 1]
    assert decoder.decode()[0].tolist() == [1.0, 1.0]
    decoder.reset()
    assert decoder.received == [] and not decoder.decodable


def test_ldpc_and_binary_codes_get_the_peeling_decoder() -> None:
    matrix = LDPCCode().assignment_matrix(8, 15)
    assert isinstance(make_decoder(matrix, scheme=LDPCCode()), PeelingDecoder)
    assert isinstance(make_decoder(np.eye(3)), PeelingDecoder)
    assert type(make_decoder(MDSCode().assignment_matrix(3, 4))) is LeastSquaresDecoder


def test_peeling_falls_back_to_least_squares_when_it_stalls() -> None:
    # No row has a single unknown agent, but the three rows have rank 3.
    matrix = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]])
    theta = torch.tensor([[1.0], [2.0], [3.0]], dtype=torch.float64)
    decoder = PeelingDecoder(matrix)
    for learner, y in enumerate(coded(matrix, theta)):
        decoder.add(learner, y)
    assert not decoder.peels and decoder.decodable
    assert relative_error(decoder.decode(), theta) < 1e-12
