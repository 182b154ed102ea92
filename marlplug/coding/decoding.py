"""Decoders: recover the M agents' vectors θ from the learners' coded results y_j = Σ_i C[j,i]·θ_i.

Results arrive one by one (:meth:`Decoder.add`); :attr:`Decoder.decodable` says whether the rows heard
so far suffice; :meth:`Decoder.decode` returns θ as an ``[M, D]`` tensor. Least squares uses every
received row in float64; peeling solves sparse 0/1 codes with additions only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import torch

from marlplug.coding.conditioning import matrix_condition

#: A received subset more ill-conditioned than this counts as not decodable. Errors in the results
#: grow by up to this factor: float64 keeps ~1e-10 relative accuracy, float32 ~0.06 in the worst case.
DEFAULT_MAX_CONDITION = 1e6

#: Columns of θ processed per float64 block; small enough to stay in cache.
CHUNK_COLUMNS = 1 << 16


class NotDecodableError(RuntimeError):
    """``decode()`` was called before the received rows could recover every agent."""


def is_binary(matrix: np.ndarray) -> bool:
    """Whether every entry is 0 or 1 (codes that peeling decodes with additions only)."""
    return bool(np.isin(matrix, (0.0, 1.0)).all())


def least_squares_weights(matrix: np.ndarray, rows: list[int]) -> np.ndarray:
    """The ``[M, R]`` float64 map from the received rows' results to θ.

    ``θ = W @ y_rows`` is the least-squares solution over *all* received rows (``W = pinv(C_rows)``,
    computed by ``numpy.linalg.lstsq``).
    """
    weights, *_ = np.linalg.lstsq(matrix[rows], np.eye(len(rows)), rcond=None)
    return np.asarray(weights)


def rows_condition(matrix: np.ndarray, rows: list[int]) -> float:
    """The condition number of ``matrix[rows]``: inf below rank M (the one test of whether a set
    of answers decodes, with a decoder's ``max_condition``).

    Examples:
        >>> rows_condition(np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 1.0]]), [0, 1])
        2.0
        >>> rows_condition(np.eye(3, 2), [0, 2])
        inf
    """
    if len(rows) < matrix.shape[1]:
        return float("inf")
    return matrix_condition(matrix[rows])


def undecodable_reason(matrix: np.ndarray, rows: list[int], max_condition: float) -> str:
    """``"rank r < M agents"`` or ``"condition number c > limit l"`` for ``matrix[rows]``
    (``""`` when those rows decode by least squares).

    Examples:
        >>> undecodable_reason(np.eye(3, 2), [0, 2], 1e6)
        'rank 1 < 2 agents'
    """
    condition = rows_condition(matrix, rows)
    if np.isinf(condition):
        rank = int(np.linalg.matrix_rank(matrix[rows])) if rows else 0
        return f"rank {rank} < {matrix.shape[1]} agents"
    if condition > max_condition:
        return f"condition number {condition:.2g} > limit {max_condition:.2g}"
    return ""


def combine_rows(weights: np.ndarray, results: list[torch.Tensor]) -> torch.Tensor:
    """``weights @ stack(results)`` accumulated in float64, returned in the results' dtype.

    Works through the columns in cache-sized blocks, so the only large allocation is the ``[M, D]``
    output: no stacked copy of the results and no float64 copy of them.
    """
    first = results[0]
    num_columns = first.numel()
    out = torch.empty((weights.shape[0], num_columns), dtype=first.dtype, device=first.device)
    weights64 = torch.as_tensor(weights, dtype=torch.float64, device=first.device)
    chunk = min(CHUNK_COLUMNS, num_columns)
    block = torch.empty((len(results), chunk), dtype=torch.float64, device=first.device)
    product = torch.empty((weights.shape[0], chunk), dtype=torch.float64, device=first.device)
    for start in range(0, num_columns, chunk):
        stop = min(start + chunk, num_columns)
        width = stop - start
        for row, result in enumerate(results):
            block[row, :width].copy_(result[start:stop])
        torch.mm(weights64, block[:, :width], out=product[:, :width])
        out[:, start:stop].copy_(product[:, :width])
    return out


def peeling_schedule(matrix: np.ndarray, rows: list[int]) -> list[tuple[int, int]] | None:
    """The order ``[(row, agent), ...]`` in which peeling recovers every agent, or None if it stalls.

    Peeling repeatedly takes a received row with exactly one unrecovered agent in its support and
    solves for that agent. It needs only additions (for 0/1 codes) and touches each edge once.

    Examples:
        >>> C = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
        >>> peeling_schedule(C, [1, 0])
        [(0, 0), (1, 1)]
        >>> peeling_schedule(C, [1]) is None
        True
    """
    unknown = {row: set(np.flatnonzero(matrix[row]).tolist()) for row in rows}
    schedule: list[tuple[int, int]] = []
    recovered: set[int] = set()
    progress = True
    while progress and len(recovered) < matrix.shape[1]:
        progress = False
        for row in rows:
            pending = unknown[row] - recovered
            unknown[row] = pending
            if len(pending) == 1:
                agent = pending.pop()
                recovered.add(agent)
                schedule.append((row, agent))
                progress = True
    return schedule if len(recovered) == matrix.shape[1] else None


class Decoder(ABC):
    """Collects learners' results and recovers θ once the received rows allow it.

    Args:
        assignment_matrix: the ``(N, M)`` matrix C the learners were given.
        max_condition: a received subset with a larger condition number is not decodable
            (default :data:`DEFAULT_MAX_CONDITION`).

    ``add`` keeps a view of each result (flattened, no copy when it is contiguous); a learner's second
    answer is ignored. All results must have the same number of elements, dtype and device.
    """

    def __init__(
        self, assignment_matrix: np.ndarray, *, max_condition: float | None = None
    ) -> None:
        matrix = np.asarray(assignment_matrix, dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape[0] < matrix.shape[1]:
            raise ValueError(
                f"assignment matrix must be (N, M) with N >= M, got shape {matrix.shape}"
            )
        self.assignment_matrix = matrix
        self.max_condition = (
            DEFAULT_MAX_CONDITION if max_condition is None else float(max_condition)
        )
        self._results: dict[int, torch.Tensor] = {}
        self._decodable_after: tuple[int, bool] = (-1, False)

    @property
    def num_agents(self) -> int:
        return self.assignment_matrix.shape[1]

    @property
    def num_learners(self) -> int:
        return self.assignment_matrix.shape[0]

    @property
    def received(self) -> list[int]:
        """Learner indices heard from, in arrival order."""
        return list(self._results)

    def add(self, learner_index: int, y: torch.Tensor) -> None:
        """Record learner ``learner_index``'s result ``y`` (any shape; flattened to ``[D]``)."""
        if not 0 <= learner_index < self.num_learners:
            raise IndexError(
                f"learner_index {learner_index} out of range for N={self.num_learners} learners"
            )
        if learner_index in self._results:
            return
        if not torch.is_floating_point(y):
            raise TypeError(
                f"learner {learner_index}: expected a floating-point tensor, got {y.dtype}"
            )
        flat = y.reshape(-1)
        if self._results:
            first = next(iter(self._results.values()))
            if (flat.numel(), flat.dtype, flat.device) != (
                first.numel(),
                first.dtype,
                first.device,
            ):
                raise ValueError(
                    f"learner {learner_index}: result has {flat.numel()} {flat.dtype} values on "
                    f"{flat.device}, earlier results have {first.numel()} {first.dtype} on {first.device}"
                )
        self._results[learner_index] = flat

    def reset(self) -> None:
        """Forget every result (start a new round with the same matrix)."""
        self._results.clear()
        self._decodable_after = (-1, False)

    @property
    def decodable(self) -> bool:
        """Whether :meth:`decode` can recover every agent from the results received so far."""
        count, answer = self._decodable_after
        if count != len(self._results):
            answer = self.can_decode(self.received)
            self._decodable_after = (len(self._results), answer)
        return answer

    @abstractmethod
    def can_decode(self, rows: list[int]) -> bool:
        """Whether results from learners ``rows`` would be decodable (depends on C only)."""

    @abstractmethod
    def decode(self) -> torch.Tensor:
        """θ as an ``[M, D]`` tensor in the results' dtype; raises :class:`NotDecodableError`."""

    def why_not(self, rows: list[int] | None = None) -> str:
        """Why results from ``rows`` (default: those received) do not decode, in a few words.

        Examples:
            >>> decoder = LeastSquaresDecoder(np.array([[1.0, 0.0], [1.0, 1e-9], [0.0, 0.0]]))
            >>> decoder.why_not([0]), decoder.why_not([0, 1])
            ('rank 1 < 2 agents', 'condition number 2e+09 > limit 1e+06')
        """
        rows = self.received if rows is None else rows
        return undecodable_reason(self.assignment_matrix, rows, self.max_condition)

    def _not_decodable(self) -> NotDecodableError:
        rows = self.received
        return NotDecodableError(
            f"cannot decode from learners {sorted(rows)}: {self.why_not(rows)}"
        )


class LeastSquaresDecoder(Decoder):
    """Least squares over every received row, solved in float64.

    Decodable once the received rows have rank M and condition number at most ``max_condition``.

    Examples:
        >>> C = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> decoder = LeastSquaresDecoder(C)
        >>> theta = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
        >>> decoder.add(2, theta[0] + theta[1]); decoder.decodable
        False
        >>> decoder.add(0, theta[0]); decoder.decode().round(decimals=9).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """

    def can_decode(self, rows: list[int]) -> bool:
        return rows_condition(self.assignment_matrix, rows) <= self.max_condition

    def decode(self) -> torch.Tensor:
        rows = self.received
        if not self.can_decode(rows):
            raise self._not_decodable()
        weights = least_squares_weights(self.assignment_matrix, rows)
        return combine_rows(weights, [self._results[row] for row in rows])


class PeelingDecoder(LeastSquaresDecoder):
    """Peeling for sparse codes (additions only for 0/1 codes), least squares when peeling stalls.

    Examples:
        >>> C = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
        >>> decoder = PeelingDecoder(C)
        >>> theta = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> decoder.add(1, theta[0] + theta[1]); decoder.add(2, theta[1])
        >>> decoder.peels, decoder.decode().tolist()
        (True, [[1.0, 2.0], [3.0, 4.0]])
    """

    @property
    def peels(self) -> bool:
        """Whether peeling alone recovers every agent from the results received so far."""
        return peeling_schedule(self.assignment_matrix, self.received) is not None

    def can_decode(self, rows: list[int]) -> bool:
        if len(rows) < self.num_agents:
            return False
        return peeling_schedule(self.assignment_matrix, rows) is not None or super().can_decode(
            rows
        )

    def decode(self) -> torch.Tensor:
        schedule = peeling_schedule(self.assignment_matrix, self.received)
        if schedule is None:
            return super().decode()
        first = next(iter(self._results.values()))
        out = torch.empty((self.num_agents, first.numel()), dtype=first.dtype, device=first.device)
        for row, agent in schedule:
            coefficients = self.assignment_matrix[row]
            out[agent].copy_(self._results[row])
            for other in np.flatnonzero(coefficients).tolist():
                if other != agent:
                    out[agent].sub_(out[other], alpha=float(coefficients[other]))
            if coefficients[agent] != 1.0:
                out[agent].div_(float(coefficients[agent]))
        return out


def default_decoder(
    assignment_matrix: np.ndarray, *, max_condition: float | None = None
) -> Decoder:
    """Peeling (with least-squares fallback) for 0/1 matrices, least squares otherwise."""
    matrix = np.asarray(assignment_matrix, dtype=np.float64)
    if is_binary(matrix):
        return PeelingDecoder(matrix, max_condition=max_condition)
    return LeastSquaresDecoder(matrix, max_condition=max_condition)


def make_decoder(
    assignment_matrix: np.ndarray,
    *,
    scheme: object | None = None,
    max_condition: float | None = None,
) -> Decoder:
    """A fresh decoder for ``assignment_matrix``: the scheme's own if it has one, else the default.

    Args:
        assignment_matrix: the ``(N, M)`` matrix the learners were given.
        scheme: the coding scheme that built it (its ``make_decoder`` method is used if present).
        max_condition: the largest condition number a decodable subset may have.

    Examples:
        >>> type(make_decoder(np.eye(2))).__name__
        'PeelingDecoder'
    """
    factory = getattr(scheme, "make_decoder", None)
    if factory is not None:
        decoder = factory(assignment_matrix, max_condition=max_condition)
        assert isinstance(decoder, Decoder), f"{scheme!r}.make_decoder returned {decoder!r}"
        return decoder
    return default_decoder(assignment_matrix, max_condition=max_condition)
