"""Real MDS codes (any M rows decode): marlplug's well-conditioned ``mds`` and the authors' ``vandermonde``.

Over the reals "any M rows are invertible" is not enough: the authors' monomial Vandermonde has
subsets with condition numbers of 1e12 and more, which float32 results cannot survive.
"""

from __future__ import annotations

import functools
import math
from typing import Literal

import numpy as np
from numpy.polynomial import chebyshev
from pydantic import Field

from marlplug.coding.conditioning import row_subsets, subset_conditions
from marlplug.coding.scheme import CodingScheme
from marlplug.config import Options as ComponentOptions

#: The Gaussian construction scores a candidate on at most this many M-row subsets.
SCORED_SUBSETS = 20_000


@functools.lru_cache(maxsize=64)
def _best_gaussian(num_agents: int, num_learners: int, seed: int, candidates: int) -> np.ndarray:
    """The candidate Gaussian matrix whose worst M-row subset is best conditioned."""
    rng = np.random.default_rng(seed)
    # Scoring costs ~M³ per subset: fewer subsets for large M keeps construction under a second.
    budget = max(64, SCORED_SUBSETS * 1000 // max(1000, num_agents**3))
    subsets, _ = row_subsets(num_learners, num_agents, max_subsets=budget, seed=seed)
    best, best_score = None, math.inf
    for _ in range(candidates):
        matrix = rng.standard_normal((num_learners, num_agents))
        score = float(subset_conditions(matrix, subsets).max())
        if score < best_score or best is None:
            best, best_score = matrix, score
    assert best is not None
    best.setflags(write=False)
    return best


class MDSCode(CodingScheme):
    """A well-conditioned real MDS code: every learner updates every agent; any M answers decode.

    ``construction="gaussian"`` (default) draws ``candidates`` seeded Gaussian matrices and keeps the
    one whose worst M-row subset is best conditioned (worst case ~1e4 for N=15, M=8..10).
    ``construction="chebyshev"`` is deterministic: Chebyshev polynomials T_0..T_{M-1} evaluated at the
    N Chebyshev nodes (worst case ~5e5 for N=15, M=8). Tolerates any N-M stragglers at the cost of
    density M (every learner does all the work).

    Examples:
        >>> C = MDSCode().assignment_matrix(3, 5, seed=0)
        >>> C.shape, bool((C != 0).all())
        ((5, 3), True)
    """

    name = "mds"

    class Options(ComponentOptions):
        """Options of ``mds``."""

        construction: Literal["gaussian", "chebyshev"] = Field(
            "gaussian", description="'gaussian': best of seeded draws; 'chebyshev': deterministic."
        )
        candidates: int = Field(
            16, ge=1, le=1024, description="Gaussian draws to score; the best conditioned is kept."
        )

    options: Options

    def build_matrix(self, num_agents: int, num_learners: int, seed: int) -> np.ndarray:
        if self.options.construction == "chebyshev":
            nodes = np.cos((2 * np.arange(num_learners) + 1) * np.pi / (2 * num_learners))
            return chebyshev.chebvander(nodes, num_agents - 1)
        return _best_gaussian(num_agents, num_learners, seed, self.options.candidates).copy()


class VandermondeCode(CodingScheme):
    """The authors' MDS construction, kept for comparison: ``np.vander(np.linspace(0.1, 0.5, M), N).T``.

    Row j holds the powers x_i^(N-1-j) of M points in [0.1, 0.5]. Mathematically MDS, numerically
    not: its subsets reach condition numbers of 1e12-1e13 for N=15, so the default decoder refuses them.

    Examples:
        >>> VandermondeCode().assignment_matrix(2, 3).round(3).tolist()
        [[0.01, 0.25], [0.1, 0.5], [1.0, 1.0]]
    """

    name = "vandermonde"

    def build_matrix(self, num_agents: int, num_learners: int, seed: int) -> np.ndarray:
        return np.vander(np.linspace(0.1, 0.5, num_agents), num_learners).T.astype(np.float64)
