"""Linear algebra over GF(2) for parity-check matrices: row reduction, rank, systematic generators.

Only what LDPC construction needs; matrices are small (N up to a few hundred), so plain numpy is enough.
"""

from __future__ import annotations

import numpy as np


def row_reduce(matrix: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Reduced row echelon form of a 0/1 matrix over GF(2), and its pivot columns.

    Examples:
        >>> reduced, pivots = row_reduce(np.array([[1, 1, 0], [1, 1, 1]]))
        >>> reduced.tolist(), pivots
        ([[1, 1, 0], [0, 0, 1]], [0, 2])
    """
    reduced = (np.asarray(matrix) % 2).astype(np.uint8)
    pivots: list[int] = []
    row = 0
    for column in range(reduced.shape[1]):
        if row == reduced.shape[0]:
            break
        candidates = np.flatnonzero(reduced[row:, column]) + row
        if candidates.size == 0:
            continue
        pivot_row = int(candidates[0])
        if pivot_row != row:
            reduced[[row, pivot_row]] = reduced[[pivot_row, row]]
        others = np.flatnonzero(reduced[:, column])
        others = others[others != row]
        reduced[others] ^= reduced[row]
        pivots.append(column)
        row += 1
    return reduced[:row], pivots


def rank(matrix: np.ndarray) -> int:
    """Rank over GF(2).

    Examples:
        >>> rank(np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]]))
        2
    """
    return len(row_reduce(matrix)[1])


def systematic_generator(parity_check: np.ndarray) -> np.ndarray:
    """A generator ``G`` (k×n, 0/1) of the code ``{c : H c = 0 mod 2}``, systematic on k positions.

    The information positions are the non-pivot columns of ``H``'s reduced form, where ``G`` holds an
    identity; the code positions stay in ``H``'s column order, so ``G @ H.T % 2 == 0``.

    Examples:
        >>> H = np.array([[1, 1, 0], [0, 1, 1]])
        >>> systematic_generator(H).tolist()
        [[1, 1, 1]]
    """
    reduced, pivots = row_reduce(parity_check)
    n = reduced.shape[1]
    free = [column for column in range(n) if column not in set(pivots)]
    generator = np.zeros((len(free), n), dtype=np.uint8)
    generator[:, free] = np.eye(len(free), dtype=np.uint8)
    # Row i of the reduced H says: c[pivot_i] = sum over free f of reduced[i, f] * c[f] (mod 2).
    generator[:, pivots] = reduced[:, free].T
    return generator
