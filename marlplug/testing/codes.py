"""The contract every coding scheme must meet, as a pytest base class and as one function.

Plugin authors subclass :class:`CodingSchemeContract` in a test module (or call
:func:`check_coding_scheme`); marlplug runs the same suite on its built-in codes.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest
import torch

from marlplug.coding.decoding import Decoder, NotDecodableError, make_decoder
from marlplug.coding.scheme import InvalidCodeError
from marlplug.config import Options
from marlplug.errors import UserError

#: Decoding random float64 θ from a decodable subset must be this accurate.
MAX_RELATIVE_ERROR = 1e-9


def build_scheme(scheme_class: Any) -> Any:
    """Build a scheme from its default options, the way a config does."""
    options = scheme_class.Options()
    return scheme_class(**options.model_dump())


def check_options(scheme_class: type) -> None:
    """The class declares an ``Options`` model and is built from exactly its fields."""
    options_model = getattr(scheme_class, "Options", None)
    assert isinstance(options_model, type) and issubclass(options_model, Options), (
        f"{scheme_class.__name__}.Options must subclass marlplug.config.Options"
    )
    build_scheme(scheme_class)
    with pytest.raises(UserError):
        scheme_class(no_such_option_xyz=1)


def check_matrix(scheme: Any, num_agents: int, num_learners: int, seed: int) -> np.ndarray:
    """The matrix is (N, M), float64, finite, rank M, and the same for the same seed."""
    matrix = scheme.assignment_matrix(num_agents, num_learners, seed)
    where = f"{scheme!r} at M={num_agents}, N={num_learners}, seed={seed}"
    assert isinstance(matrix, np.ndarray), f"{where}: not a numpy array"
    assert matrix.shape == (num_learners, num_agents), f"{where}: shape {matrix.shape}"
    assert matrix.dtype == np.float64, f"{where}: dtype {matrix.dtype}"
    assert np.isfinite(matrix).all(), f"{where}: non-finite entries"
    assert np.linalg.matrix_rank(matrix) == num_agents, f"{where}: rank below M"
    again = scheme.assignment_matrix(num_agents, num_learners, seed)
    assert np.array_equal(matrix, again), f"{where}: the same seed gave a different matrix"
    return matrix


def check_rejects_too_few_learners(scheme: Any) -> None:
    """N < M is a one-line :class:`InvalidCodeError`, not a crash."""
    with pytest.raises(InvalidCodeError, match="N >= M"):
        scheme.assignment_matrix(4, 3, 0)


def _decode(
    decoder: Decoder, theta: torch.Tensor, order: list[int], matrix: np.ndarray
) -> list[int]:
    """Feed results in ``order`` until decodable; return the learners used."""
    used = []
    coded = torch.as_tensor(matrix) @ theta
    for learner in order:
        decoder.add(learner, coded[learner])
        used.append(learner)
        if decoder.decodable:
            break
    return used


def check_round_trip(
    scheme: Any, matrix: np.ndarray, *, seed: int, well_conditioned: bool, orders: int = 10
) -> None:
    """Decoding random θ from every learner, and from random arrival orders, recovers θ.

    Whenever the decoder says ``decodable``, the result is within :data:`MAX_RELATIVE_ERROR`;
    whenever it does not, ``decode()`` raises :class:`NotDecodableError`. A well-conditioned scheme
    must decode once every learner has answered.
    """
    rng = np.random.default_rng(seed)
    num_learners, num_agents = matrix.shape
    theta = torch.as_tensor(rng.standard_normal((num_agents, 7)))
    for attempt in range(orders + 1):
        order = (
            list(range(num_learners)) if attempt == 0 else rng.permutation(num_learners).tolist()
        )
        decoder = make_decoder(matrix, scheme=scheme)
        used = _decode(decoder, theta, order, matrix)
        where = f"{scheme!r}: learners {sorted(used)}"
        if decoder.decodable:
            error = float((decoder.decode() - theta).norm() / theta.norm())
            assert error <= MAX_RELATIVE_ERROR, f"{where}: relative error {error:.3g}"
        else:
            assert not (attempt == 0 and well_conditioned), (
                f"{where}: every learner answered, not decodable"
            )
            with pytest.raises(NotDecodableError):
                decoder.decode()


def check_coding_scheme(
    scheme_class: type,
    *,
    sizes: tuple[tuple[int, int], ...] = ((3, 5), (8, 15), (10, 15)),
    seeds: tuple[int, ...] = (0, 1),
    well_conditioned: bool = True,
) -> None:
    """Run the whole contract on ``scheme_class``; raises ``AssertionError`` naming what failed.

    Args:
        scheme_class: the coding-scheme class a plugin registers.
        sizes: ``(M, N)`` pairs the scheme supports.
        seeds: seeds to build matrices with.
        well_conditioned: whether every learner's answers together must be decodable under the
            default condition limit (False only for deliberately ill-conditioned codes).

    Examples:
        >>> from marlplug.coding import ReplicationCode
        >>> check_coding_scheme(ReplicationCode, sizes=((2, 3),), seeds=(0,))
    """
    check_options(scheme_class)
    scheme = build_scheme(scheme_class)
    check_rejects_too_few_learners(scheme)
    for num_agents, num_learners in sizes:
        for seed in seeds:
            matrix = check_matrix(scheme, num_agents, num_learners, seed)
            check_round_trip(scheme, matrix, seed=seed, well_conditioned=well_conditioned)


class CodingSchemeContract:
    """Pytest base class: subclass it as ``Test...`` and set ``scheme_class`` to run the contract.

    Examples:
        A plugin's ``tests/test_contract.py``::

            from marlplug.testing import CodingSchemeContract
            from marlplug_polycode import ChebyshevCode

            class TestChebyshevCode(CodingSchemeContract):
                scheme_class = ChebyshevCode
                registered_name = "chebyshev"
    """

    #: The coding-scheme class under test.
    scheme_class: ClassVar[type]
    #: ``(M, N)`` pairs the scheme supports.
    sizes: ClassVar[tuple[tuple[int, int], ...]] = ((3, 5), (8, 15), (10, 15))
    seeds: ClassVar[tuple[int, ...]] = (0, 1)
    #: False only for deliberately ill-conditioned codes (the authors' Vandermonde).
    well_conditioned: ClassVar[bool] = True
    #: If set, the name the installed plugin registers the class under.
    registered_name: ClassVar[str | None] = None

    def test_options(self) -> None:
        check_options(self.scheme_class)

    def test_rejects_too_few_learners(self) -> None:
        check_rejects_too_few_learners(build_scheme(self.scheme_class))

    def test_matrices(self) -> None:
        scheme = build_scheme(self.scheme_class)
        for num_agents, num_learners in self.sizes:
            for seed in self.seeds:
                check_matrix(scheme, num_agents, num_learners, seed)

    def test_round_trip(self) -> None:
        scheme = build_scheme(self.scheme_class)
        for num_agents, num_learners in self.sizes:
            for seed in self.seeds:
                matrix = scheme.assignment_matrix(num_agents, num_learners, seed)
                check_round_trip(scheme, matrix, seed=seed, well_conditioned=self.well_conditioned)

    def test_registered(self) -> None:
        if self.registered_name is None:
            pytest.skip("registered_name not set")
        from marlplug.plugins import get_component

        assert get_component("code", self.registered_name) is self.scheme_class


__all__ = ["MAX_RELATIVE_ERROR", "CodingSchemeContract", "check_coding_scheme"]
