"""Condition numbers of row subsets of an assignment matrix: which learner sets decode accurately.

Exact enumeration of the subsets while there are few enough, a seeded random sample otherwise.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

#: Enumerate every subset while there are at most this many; sample beyond.
DEFAULT_MAX_SUBSETS = 100_000


def row_subsets(
    num_rows: int, size: int, *, max_subsets: int = DEFAULT_MAX_SUBSETS, seed: int = 0
) -> tuple[np.ndarray, bool]:
    """Every ``size``-subset of ``range(num_rows)`` if there are at most ``max_subsets``, else a sample.

    Returns:
        ``(subsets, exact)``: an int array ``[S, size]`` of sorted row indices, and whether it holds
        every subset (``False``: ``max_subsets`` uniformly random ones, seeded).

    Examples:
        >>> subsets, exact = row_subsets(4, 3)
        >>> subsets.tolist(), exact
        ([[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]], True)
    """
    if math.comb(num_rows, size) <= max_subsets:
        combos = list(itertools.combinations(range(num_rows), size))
        return np.array(combos, dtype=np.int64).reshape(len(combos), size), True
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((max_subsets, num_rows)), axis=1)[:, :size]
    return np.sort(order, axis=1), False


def subset_conditions(matrix: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """The 2-norm condition number of ``matrix[rows]`` for each row of ``subsets``; inf below rank M.

    Examples:
        >>> subset_conditions(np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 1.0]]), np.array([[0, 1], [1, 2]]))
        array([ 2., inf])
    """
    if subsets.shape[0] == 0:
        return np.empty(0)
    singular_values = np.linalg.svd(matrix[subsets], compute_uv=False)
    largest, smallest = singular_values[:, 0], singular_values[:, -1]
    # numpy.linalg.matrix_rank's tolerance: below it the subset is rank deficient.
    tolerance = largest * max(subsets.shape[1], matrix.shape[1]) * np.finfo(np.float64).eps
    full_rank = (smallest > tolerance) & (subsets.shape[1] >= matrix.shape[1])
    with np.errstate(divide="ignore"):
        return np.where(full_rank, largest / np.where(full_rank, smallest, 1.0), np.inf)


def matrix_condition(matrix: np.ndarray) -> float:
    """Condition number of one matrix (inf when its rank is below its column count)."""
    rows = np.arange(matrix.shape[0])[None, :]
    return float(subset_conditions(matrix, rows)[0])


@dataclass(frozen=True)
class ConditionSummary:
    """The worst condition number over the full-rank subsets of at least M rows.

    Attributes:
        worst: the largest finite condition number found (inf if no subset has rank M).
        exact: whether every subset was examined (else a seeded sample per size).
        subsets: how many subsets were examined.
    """

    worst: float
    exact: bool
    subsets: int


def worst_condition(
    matrix: np.ndarray, *, max_subsets: int = DEFAULT_MAX_SUBSETS, seed: int = 0
) -> ConditionSummary:
    """The worst condition number over every rank-M subset of at least M rows of ``matrix``.

    Rank-deficient subsets cannot be decoded at any precision and are left out; the number says how
    much a decodable subset can amplify rounding errors (float32 error ≈ condition × 6e-8).

    Examples:
        >>> worst_condition(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])).worst > 1
        True
    """
    num_learners, num_agents = matrix.shape
    sizes = range(num_agents, num_learners + 1)
    total = sum(math.comb(num_learners, size) for size in sizes)
    per_size = max_subsets if total <= max_subsets else max(1, max_subsets // len(sizes))
    worst, exact, examined = 0.0, True, 0
    any_full_rank = False
    for size in sizes:
        subsets, size_exact = row_subsets(
            num_learners, size, max_subsets=per_size, seed=seed + size
        )
        conditions = subset_conditions(matrix, subsets)
        finite = conditions[np.isfinite(conditions)]
        if finite.size:
            any_full_rank = True
            worst = max(worst, float(finite.max()))
        exact &= size_exact
        examined += len(subsets)
    return ConditionSummary(worst if any_full_rank else math.inf, exact, examined)
